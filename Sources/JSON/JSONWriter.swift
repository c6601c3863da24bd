/// Serialises JSON compactly into bytes. Numbers that are whole print without a fraction.
public enum JSONWriter {
    /// `value` as compact UTF-8 JSON.
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        // Problem details and most other answers are under 1 KiB: one allocation each.
        out.reserveCapacity(1024)
        write(value, into: &out)
        return out
    }

    /// `value` as a compact JSON string.
    public static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    /// Appends `value` to `out`.
    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): writeNumber(n, into: &out)
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeNumber(_ n: Double, into out: inout [UInt8]) {
        // JSON has no NaN or infinity; callers never produce them, null keeps the output valid.
        guard n.isFinite else { out.append(contentsOf: "null".utf8); return }
        if n == n.rounded(), abs(n) < 9.007_199_254_740_992e15 {
            // An integer (counts, statuses, versions): its digits, without a `String` between.
            var magnitude = UInt64(abs(n))
            if n < 0 { out.append(UInt8(ascii: "-")) }
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { digits in
                var first = 16
                repeat {
                    first -= 1
                    digits[first] = UInt8(ascii: "0") &+ UInt8(magnitude % 10)
                    magnitude /= 10
                } while magnitude > 0
                out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[first...]))
            }
        } else {
            out.append(contentsOf: "\(n)".utf8)
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, into out: inout [UInt8]) {
        // Almost every string needs no escaping: checked 8 bytes at a time, then copied whole.
        let written: Bool? = s.utf8.withContiguousStorageIfAvailable { bytes in
            guard isPlain(bytes) else { return false }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: bytes)
            out.append(UInt8(ascii: "\""))
            return true
        }
        if written != true { writeEscaped(s, into: &out) }
    }

    /// Whether `bytes` hold no control character, quote or backslash (can go between quotes as
    /// they are).
    static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var i = 0
        while i + 8 <= bytes.count {
            if hasByteToEscape(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { return false }
            i += 8
        }
        while i < bytes.count {
            let c = bytes[i]
            if c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { return false }
            i += 1
        }
        return true
    }

    /// Whether any byte of `word` is below 0x20, a quote or a backslash (the classic "has a zero
    /// byte" test on the word and on its XOR with each of the two characters; exact, since a
    /// borrow can only start at a byte that matched).
    @inline(__always)
    private static func hasByteToEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let found = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
        return found & highs != 0
    }

    private static func writeEscaped(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        // Runs that need no escaping are copied whole, not byte by byte.
        s.withUTF8 { bytes in
            var runStart = 0
            for i in bytes.indices {
                let c = bytes[i]
                guard c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                runStart = i + 1
                switch c {
                case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
                case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                default:
                    out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 0xF)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
