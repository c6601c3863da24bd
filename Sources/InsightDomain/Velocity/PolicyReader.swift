/// A parsed policy file. Numbers keep their text, so a threshold is read as a whole number
/// exactly as written.
enum PolicyJSON {
    case object([(String, PolicyJSON)])
    case array([PolicyJSON])
    case string(String)
    case number(String)
    case bool(Bool)
    case null
}

/// A small strict RFC 8259 reader for the escalation policy file (InsightDomain does not
/// depend on the JSON module): duplicate keys, invalid UTF-8, lone surrogates, control
/// characters in strings, trailing text and nesting deeper than 16 are refused, with the line
/// and column.
struct PolicyReader {
    private let bytes: [UInt8]
    private var i = 0

    static func read(_ bytes: [UInt8]) throws(PolicyError) -> PolicyJSON {
        var reader = PolicyReader(bytes: bytes)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.i == bytes.count else { throw reader.error("unexpected text after the document") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ what: String) -> PolicyError {
        var line = 1, column = 1
        for b in bytes[..<min(i, bytes.count)] {
            if b == UInt8(ascii: "\n") { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return PolicyError("policy file, line \(line) column \(column): \(what)")
    }

    private mutating func skipSpace() {
        while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    private mutating func expect(_ c: Unicode.Scalar) throws(PolicyError) {
        guard i < bytes.count, bytes[i] == UInt8(ascii: c) else { throw error("expected \"\(c)\"") }
        i += 1
    }

    private mutating func value(depth: Int) throws(PolicyError) -> PolicyJSON {
        guard depth < 16 else { throw error("nested too deeply") }
        guard i < bytes.count else { throw error("unexpected end of the document") }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            var members: [(String, PolicyJSON)] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a field name") }
                let start = i
                let key = try string()
                if members.contains(where: { $0.0 == key }) {
                    i = start
                    throw error("duplicate field \"\(key)\"")
                }
                skipSpace()
                try expect(":")
                skipSpace()
                members.append((key, try value(depth: depth + 1)))
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                try expect("}")
                return .object(members)
            }
        case UInt8(ascii: "["):
            i += 1
            var items: [PolicyJSON] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                try expect("]")
                return .array(items)
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try number())
        default:
            for (word, literal) in [("true", PolicyJSON.bool(true)), ("false", .bool(false)), ("null", .null)]
            where bytes[i...].starts(with: word.utf8) {
                i += word.utf8.count
                return literal
            }
            throw error("unexpected character")
        }
    }

    private mutating func digits() -> Int {
        let start = i
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
        return i - start
    }

    private mutating func number() throws(PolicyError) -> String {
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        let leadingZero = i < bytes.count && bytes[i] == UInt8(ascii: "0")
        let whole = digits()
        guard whole > 0, !(leadingZero && whole > 1) else { throw error("invalid number") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw error("invalid number") }
        }
        if i < bytes.count, bytes[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw error("invalid number") }
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    private mutating func hex4() throws(PolicyError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for b in bytes[i..<i + 4] {
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
        }
        i += 4
        return value
    }

    private mutating func string() throws(PolicyError) -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw error("unterminated string") }
            let b = bytes[i]
            i += 1
            switch b {
            case UInt8(ascii: "\""):
                guard let text = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                guard i < bytes.count else { throw error("unterminated string") }
                let escape = bytes[i]
                i += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard bytes[i...].starts(with: "\\u".utf8) else { throw error("lone surrogate") }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate") }
                        code = 0x10000 + (code - 0xD800) << 10 + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("lone surrogate") }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default:
                    throw error("invalid escape")
                }
            case 0x00..<0x20:
                throw error("control character in a string")
            default:
                out.append(b)
            }
        }
    }
}
