/// A small strict JSON (RFC 8259) reader for model artifacts, used at load time only.
///
/// Why not Foundation's JSONSerialization: on Linux it does not round-trip doubles (about one in
/// five 17-digit values comes back a few ulps off, measured on this toolchain), and a split
/// threshold one ulp off sends a value down the wrong branch. Numbers here are converted by
/// Swift's `Double(_: Substring)`, which rounds correctly, so thresholds and leaf values are the
/// exact doubles LightGBM wrote.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }
    var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
    var numberValue: Double? {
        if case .number(let n) = self { return n }
        return nil
    }
    var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }
    /// A number that is a whole value representable as Int.
    var intValue: Int? {
        guard let n = numberValue, n == n.rounded(), abs(n) < 9.0e15 else { return nil }
        return Int(n)
    }
}

struct JSONParseError: Error, Sendable, CustomStringConvertible {
    var offset: Int
    var message: String
    var description: String { "invalid JSON at byte \(offset): \(message)" }
}

struct JSONReader {
    private let bytes: [UInt8]
    private var i = 0
    private var depth = 0
    private static let maxDepth = 64

    static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var reader = JSONReader(bytes: bytes)
        reader.skipSpace()
        let value = try reader.value()
        reader.skipSpace()
        guard reader.i == bytes.count else { throw reader.fail("unexpected data after the document") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func fail(_ message: String) -> JSONParseError {
        JSONParseError(offset: i, message: message)
    }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 {
            i += 1
        }
    }

    private mutating func value() throws(JSONParseError) -> JSONValue {
        guard i < bytes.count else { throw fail("unexpected end of data") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("unexpected character")
        }
    }

    private mutating func literal(_ word: String) throws(JSONParseError) {
        let expected = Array(word.utf8)
        guard i + expected.count <= bytes.count else { throw fail("unexpected end of data") }
        for k in 0..<expected.count where bytes[i + k] != expected[k] { throw fail("invalid literal") }
        i += expected.count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONReader.maxDepth else { throw fail("nested deeper than \(JSONReader.maxDepth)") }
    }

    private mutating func object() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        var result: [String: JSONValue] = [:]
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            depth -= 1
            return .object(result)
        }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try string()
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            let member = try value()
            guard result.updateValue(member, forKey: key) == nil else {
                throw fail("duplicate member \"\(key)\"")
            }
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of data") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return .object(result)
    }

    private mutating func array() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        var result: [JSONValue] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            depth -= 1
            return .array(result)
        }
        while true {
            skipSpace()
            result.append(try value())
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of data") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(result)
    }

    private mutating func string() throws(JSONParseError) -> String {
        i += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") { i += 1; break }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") {
                out.append(c)
                i += 1
                continue
            }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u")
                    else { throw fail("unpaired surrogate") }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail("unpaired surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default:
                throw fail("invalid escape")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("string is not UTF-8") }
        return s
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail("bad hex digit in \\u escape")
            }
            v = v * 16 + d
            i += 1
        }
        return v
    }

    private mutating func number() throws(JSONParseError) -> Double {
        let start = i
        func digit(_ k: Int) -> Bool { k < bytes.count && bytes[k] >= 0x30 && bytes[k] <= 0x39 }
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard digit(i) else { throw fail("expected a digit") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            while digit(i) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digit(i) else { throw fail("expected a digit after '.'") }
            while digit(i) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digit(i) else { throw fail("expected a digit in the exponent") }
            while digit(i) { i += 1 }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(offset: start, message: "number \(text) is out of range")
        }
        return value
    }
}
