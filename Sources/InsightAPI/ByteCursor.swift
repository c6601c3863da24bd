import JSON

/// Reads well-formed JSON straight from a document's bytes, for the readers that take part of a
/// request themselves (`EventsReader`, `SummaryReader`); every read answers nil, or false, for
/// anything it does not accept, and the caller then declines.
struct ByteCursor {
    let bytes: UnsafeBufferPointer<UInt8>
    var index: Int

    /// Whether `bytes` spell `literal` (compared byte by byte: `elementsEqual` with a `String`'s
    /// UTF-8 view is not specialised and was a tenth of reading 150 events).
    static func equal(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        let start = literal.utf8Start
        for (i, byte) in bytes.enumerated() where byte != start[i] { return false }
        return true
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// A string of ASCII letters, without its quotes; nil for anything else.
    mutating func plainString() -> Slice<UnsafeBufferPointer<UInt8>>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                index += 1
                return bytes[start..<(index - 1)]
            }
            guard (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") else { return nil }
            index += 1
        }
        return nil
    }

    /// A non-negative integer of at most 15 digits, without leading zeros, not followed by a
    /// fraction or exponent; nil for anything else.
    mutating func plainInteger() -> Int64? {
        let start = index
        var value: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
            if index - start > 15 { return nil }
        }
        let digits = index - start
        guard digits > 0, !(digits > 1 && bytes[start] == UInt8(ascii: "0")) else { return nil }
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        return value
    }

    /// A JSON number, as the parser reads it; nil for anything else.
    mutating func number() -> Double? {
        guard let (value, end) = JSONParser.number(in: bytes, at: index) else { return nil }
        index = end
        return value
    }
}
