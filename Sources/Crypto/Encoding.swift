/// Lowercase hexadecimal.
public enum Hex {
    static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lowercase hex.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { encode($0) }
    }

    /// `bytes` as lowercase hex, written straight into the string's storage.
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            digits.withUnsafeBufferPointer { digits in
                for (i, b) in bytes.enumerated() {
                    out[2 * i] = digits[Int(b >> 4)]
                    out[2 * i + 1] = digits[Int(b & 0x0F)]
                }
            }
            return bytes.count * 2
        }
    }

    /// Decodes hex (either case); nil if the text is not an even run of hex digits.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = value(chars[i]), let lo = value(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Base64url without padding (RFC 4648 §5): API keys that travel in headers, and the parts of a
/// JWS (RFC 7515).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` as unpadded base64url.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        bytes.withUnsafeBytes { append($0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The length of the unpadded base64url encoding of `count` bytes.
    public static func encodedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Appends `bytes` as unpadded base64url to `out` (no intermediate string). The answer's
    /// signature encodes every response body this way, so the output is reserved once and
    /// written through pointers.
    public static func append(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let start = out.count, count = encodedCount(bytes.count)
        out.append(contentsOf: repeatElement(0, count: count))
        out.withUnsafeMutableBufferPointer { buffer in
            encode(bytes, into: UnsafeMutableBufferPointer(rebasing: buffer[start..<start + count]))
        }
    }

    /// Writes the encoding of `bytes` into `out`, which holds exactly `encodedCount(bytes.count)`,
    /// in `alphabet`'s 64 characters (base64url's unless told).
    static func encode(
        _ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>, alphabet: [UInt8] = alphabet
    ) {
        guard let source = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
            var target = out.baseAddress
        else { return }
        alphabet.withUnsafeBufferPointer { alphabet in
            let table = alphabet.baseAddress!
            var i = 0
            while i + 3 <= bytes.count {
                let n = UInt32(source[i]) << 16 | UInt32(source[i + 1]) << 8 | UInt32(source[i + 2])
                target[0] = table[Int(n >> 18)]
                target[1] = table[Int((n >> 12) & 63)]
                target[2] = table[Int((n >> 6) & 63)]
                target[3] = table[Int(n & 63)]
                target += 4
                i += 3
            }
            let rest = bytes.count - i
            if rest > 0 {
                var n = UInt32(source[i]) << 16
                if rest == 2 { n |= UInt32(source[i + 1]) << 8 }
                target[0] = table[Int((n >> 18) & 63)]
                target[1] = table[Int((n >> 12) & 63)]
                if rest == 2 { target[2] = table[Int((n >> 6) & 63)] }
            }
        }
    }

    /// Decodes unpadded base64url; nil for any other character, for padding, or for a length
    /// no encoding has (a remainder of one character), or non-zero unused bits (not canonical).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0, bits = 0
        for c in chars {
            guard let v = value(c) else { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
            }
        }
        // The bits left over must be zero: one byte sequence has exactly one encoding.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }
}

/// Base64 with padding (RFC 4648 §4): the byte sequences of HTTP structured fields (RFC 8941
/// §3.3.5). Made from the base64url coder: the two alphabets differ in two characters.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Appends `bytes` as padded base64 to `out`, written in place (every answer's
    /// `Insight-Receipt` holds a few hashes so encoded).
    public static func append(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let start = out.count, count = Base64URL.encodedCount(bytes.count)
        out.append(contentsOf: repeatElement(0, count: count))
        out.withUnsafeMutableBufferPointer { buffer in
            Base64URL.encode(bytes, into: UnsafeMutableBufferPointer(rebasing: buffer[start..<start + count]), alphabet: alphabet)
        }
        for _ in 0..<(4 - count % 4) % 4 { out.append(UInt8(ascii: "=")) }
    }

    /// `bytes` as padded base64.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        bytes.withUnsafeBytes { append($0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes padded base64; nil for any other character, missing or extra padding, or
    /// non-zero unused bits (one byte sequence has one encoding).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var padding = 0
        while padding < 2, chars.last == UInt8(ascii: "=") {
            chars.removeLast()
            padding += 1
        }
        guard padding == 0 || chars.count % 4 != 0 else { return nil }
        for i in chars.indices {
            switch chars[i] {
            case UInt8(ascii: "+"): chars[i] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): chars[i] = UInt8(ascii: "_")
            case UInt8(ascii: "-"), UInt8(ascii: "_"): return nil
            default: break
            }
        }
        return Base64URL.decode(String(decoding: chars, as: UTF8.self))
    }
}
