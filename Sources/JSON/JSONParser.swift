/// Why a document is not acceptable JSON, with the byte offset where parsing stopped.
/// Reasons are constant texts: they never quote the document.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input.
    public let offset: Int
    /// What was wrong there.
    public let reason: String
    /// Whether the document broke one of the parser's `JSONParser.Limits` rather than JSON's
    /// grammar (it may be valid JSON).
    public let exceedsLimit: Bool

    public init(offset: Int, reason: String, exceedsLimit: Bool = false) {
        self.offset = offset
        self.reason = reason
        self.exceedsLimit = exceedsLimit
    }

    public var description: String { "\(reason) at byte \(offset)" }
}

/// Lets a caller read members of one object straight from the document's bytes instead of the
/// parser building them as `JSONValue`s (a 150-event interaction as a tree cost more than
/// everything else in its request).
public struct JSONInterception {
    /// Member names from the root object down to the object whose members may be read, e.g.
    /// `["interaction"]` (empty: the root object's own members).
    public let path: [String]
    /// Called for each member of that object with its name, the document and the offset where
    /// its value starts. Returns the offset just past the value and how many JSON values it holds
    /// (itself and every element and member value within) if it read it, which leaves the member
    /// out of the parsed tree (it still counts for duplicate detection and towards
    /// `JSONParser.Limits`, so that a document meets or breaks them whoever reads it), or nil to
    /// have the parser build the value as usual. It must read only values that are valid JSON,
    /// no deeper than the limit allows, and no further than their end.
    public let read: (String, UnsafeBufferPointer<UInt8>, Int) -> (end: Int, values: Int)?

    public init(path: [String], read: @escaping (String, UnsafeBufferPointer<UInt8>, Int) -> (end: Int, values: Int)?) {
        self.path = path
        self.read = read
    }
}

/// A strict RFC 8259 parser over bytes: one value, no trailing data, valid UTF-8,
/// no duplicate object keys (which different parsers resolve differently), within `Limits`.
/// Written by hand because Foundation's decoders cost more than the whole HTTP layer.
///
/// Every step costs time linear in the document's length, whatever its shape, so that a hostile
/// document costs its sender no more than its size: duplicate names are found by a scan while an
/// object is small and through a set of its names once it is not.
public struct JSONParser {
    /// What one document may make the parser do. The defaults suit documents from outside
    /// (request bodies): each is well above what the largest valid request of the API needs
    /// (docs/api.md), and each bounds the work and memory one document can cost.
    public struct Limits: Sendable, Equatable {
        /// Deepest nesting accepted; deeper documents are refused rather than recursed into.
        public var maxDepth: Int
        /// Most members one object may have.
        public var maxMembers: Int
        /// Most values (objects, arrays, strings, numbers, literals) one document may hold; values
        /// that a `JSONInterception` reads are the reader's to bound and are not counted.
        public var maxValues: Int

        public init(maxDepth: Int = 32, maxMembers: Int = 256, maxValues: Int = 50_000) {
            self.maxDepth = maxDepth
            self.maxMembers = maxMembers
            self.maxValues = maxValues
        }

        /// For documents the daemon trusts and that may be large (its models and their fixtures,
        /// its own answers): only the nesting depth is bounded, as recursion needs.
        public static let trusted = Limits(maxMembers: .max, maxValues: .max)
    }

    /// Members reserved for each object before parsing it.
    private static let initialObjectCapacity = 4

    /// Members up to which an object's names are checked for duplicates by a scan (lengths
    /// first: a 28-member summary then costs 378 length comparisons); past it, by a set.
    /// Hashing every name of the small objects every request carries would cost more.
    static let scanMembers = 32

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private let limits: Limits
    /// Values the document may still hold (`Limits.maxValues`), counted down.
    private var valuesLeft: Int
    private let interception: JSONInterception?
    /// How many components of the interception path lead to the value being parsed (-1: it is
    /// not on the path; `path.count`: it is the object whose members are offered).
    private var pathMatched = 0

    private init(bytes: UnsafeBufferPointer<UInt8>, limits: Limits, interception: JSONInterception?) {
        self.bytes = bytes
        self.limits = limits
        valuesLeft = limits.maxValues
        self.interception = interception
        pathMatched = interception == nil ? -1 : 0
    }

    /// Parses `input` as one JSON document within `limits`; with `interception`, its member is
    /// read by the caller (see `JSONInterception`).
    public static func parse(
        _ input: [UInt8], limits: Limits = Limits(),
        intercepting interception: JSONInterception? = nil
    ) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = input.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(bytes: buffer, limits: limits, interception: interception)
            do throws(JSONParseError) {
                parser.skipWhitespace()
                let value = try parser.parseValue(depth: 0)
                parser.skipWhitespace()
                guard parser.index == buffer.count else { throw parser.error("unexpected data after the document") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses the UTF-8 of `text`.
    public static func parse(_ text: String, limits: Limits = Limits()) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }

    /// The JSON number at `start` in `bytes`, as `parse` would read it, and the offset just past
    /// it; nil when no valid, finite number starts there. For readers that take part of a
    /// document themselves (see `JSONInterception`).
    public static func number(in bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> (value: Double, end: Int)? {
        guard start < bytes.count else { return nil }  // parseNumber refuses any other first byte
        var parser = JSONParser(bytes: bytes, limits: Limits(maxDepth: 0), interception: nil)
        parser.index = start
        guard let value = try? parser.parseNumber() else { return nil }
        return (value, parser.index)
    }

    private func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: index, reason: reason)
    }

    private func limitExceeded(_ reason: String, at offset: Int) -> JSONParseError {
        JSONParseError(offset: offset, reason: reason, exceedsLimit: true)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of document") }
        valuesLeft -= 1
        guard valuesLeft >= 0 else { throw limitExceeded("more than \(limits.maxValues) values", at: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of document") }
        let start = literal.utf8Start
        for i in 0..<count where bytes[index + i] != start[i] { throw error("invalid literal") }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= limits.maxDepth else { throw limitExceeded("nesting deeper than \(limits.maxDepth)", at: index) }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(JSONObject()) }
        // Room for a typical small object up front: growing 1 → 2 → 4 would take two extra
        // allocations per object, and an interaction's events are many small objects.
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(Self.initialObjectCapacity)
        let maxMembers = limits.maxMembers
        let matched = pathMatched
        let offersMembers = interception.map { matched == $0.path.count } ?? false
        var intercepted: [String] = []  // read by the interception: not in `members`
        var names: Set<String>?  // every name so far, once there were `scanMembers`
        defer { pathMatched = matched }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let keyOffset = index
            let count = members.count + intercepted.count
            guard count < maxMembers else {
                throw limitExceeded("more than \(maxMembers) members in an object", at: keyOffset)
            }
            let key = try parseString()
            if names == nil {
                // Lengths first: `String ==` does not compare them before the bytes.
                let length = key.utf8.count
                if members.contains(where: { $0.key.utf8.count == length && $0.key == key }) || intercepted.contains(key) {
                    throw JSONParseError(offset: keyOffset, reason: "duplicate member name")
                }
                if count + 1 == Self.scanMembers {
                    var set = Set<String>(minimumCapacity: 4 * Self.scanMembers)
                    for member in members { set.insert(member.key) }
                    for name in intercepted { set.insert(name) }
                    set.insert(key)
                    names = set
                }
            } else if !names!.insert(key).inserted {
                throw JSONParseError(offset: keyOffset, reason: "duplicate member name")
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            pathMatched = -1
            // A value read elsewhere that holds more values than the document may still hold is
            // parsed instead, to be refused where the parser alone would refuse it.
            if offersMembers, index < bytes.count, let read = interception?.read(key, bytes, index), read.values <= valuesLeft {
                precondition(read.end > index && read.end <= bytes.count && read.values > 0, "an interception read outside its value")
                index = read.end
                valuesLeft -= read.values
                intercepted.append(key)
            } else {
                if !offersMembers, matched >= 0, let interception, key == interception.path[matched] {
                    pathMatched = matched + 1
                }
                members.append((key: key, value: try parseValue(depth: depth)))
            }
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of document") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(JSONObject(members)) }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= limits.maxDepth else { throw limitExceeded("nesting deeper than \(limits.maxDepth)", at: index) }
        index += 1
        var elements: [JSONValue] = []
        let matched = pathMatched
        pathMatched = -1  // interception paths go through objects only
        defer { pathMatched = matched }
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of document") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw error("expected ',' or ']'")
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let integerStart = index
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw error("leading zero in number") }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        // Fast path: an integer of at most 15 digits (times, counts) is exactly a Double.
        // (`exactDecimal` below would give the same value; this skips its second scan.)
        if index - integerStart <= 15,
            index == bytes.count || (bytes[index] != UInt8(ascii: ".") && bytes[index] | 0x20 != UInt8(ascii: "e"))
        {
            var magnitude: Int64 = 0
            for i in integerStart..<index { magnitude = magnitude &* 10 &+ Int64(bytes[i] &- UInt8(ascii: "0")) }
            return negative ? -Double(magnitude) : Double(magnitude)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if let parts = Self.decimalParts(UnsafeBufferPointer(rebasing: bytes[integerStart..<index])),
            let exact = Self.exactDecimal(parts) ?? Self.longDecimal(parts)
        {
            return negative ? -exact : exact
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(offset: start, reason: "number out of range")
        }
        return value
    }

    /// A valid unsigned JSON number as an integer of its significant digits (at most 19, so it
    /// fits a `UInt64`), how many there are, and the power of ten that scales it; nil for more
    /// digits or an exponent beyond ±400 (the caller falls back to `strtod`).
    private static func decimalParts(_ text: UnsafeBufferPointer<UInt8>) -> (mantissa: UInt64, digits: Int, exponent: Int)? {
        var mantissa: UInt64 = 0, digits = 0, exponent = 0, i = 0
        var seenPoint = false
        while i < text.count {
            let c = text[i]
            if c == UInt8(ascii: ".") {
                seenPoint = true
            } else if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                if mantissa != 0 || c != UInt8(ascii: "0") { digits += 1 }
                guard digits <= 19 else { return nil }
                mantissa = mantissa * 10 + UInt64(c - UInt8(ascii: "0"))
                if seenPoint { exponent -= 1 }
            } else {
                break  // the exponent part
            }
            i += 1
        }
        if i < text.count {  // "e" or "E", an optional sign, digits
            i += 1
            var negativeExponent = false
            if text[i] == UInt8(ascii: "+") || text[i] == UInt8(ascii: "-") {
                negativeExponent = text[i] == UInt8(ascii: "-")
                i += 1
            }
            var value = 0
            while i < text.count {
                value = value * 10 + Int(text[i] - UInt8(ascii: "0"))
                guard value <= 400 else { return nil }
                i += 1
            }
            exponent += negativeExponent ? -value : value
        }
        return (mantissa, digits, exponent)
    }

    /// Powers of ten that are exact Doubles.
    private static let exactPowersOfTen: [Double] = (0...22).map { (0..<$0).reduce(1.0) { product, _ in product * 10 } }

    /// Significant digits forming an integer of at most 2^53 and a decimal exponent within ±22:
    /// both are exact Doubles, so one multiplication or division rounds correctly (Clinger's
    /// fast path), with no `strtod` and no `String`. Nil otherwise.
    private static func exactDecimal(_ parts: (mantissa: UInt64, digits: Int, exponent: Int)) -> Double? {
        guard parts.digits <= 16, parts.mantissa <= 1 << 53 else { return nil }
        if parts.mantissa == 0 { return 0 }
        guard abs(parts.exponent) <= 22 else { return nil }
        let mantissa = Double(parts.mantissa)
        return parts.exponent >= 0 ? mantissa * exactPowersOfTen[parts.exponent] : mantissa / exactPowersOfTen[-parts.exponent]
    }

    /// 10^0 … 10^19, every power of ten below 2^64.
    private static let powersOfTen64: [UInt64] = (0...19).map { (0..<$0).reduce(1) { product, _ in product * 10 } }

    /// Up to 19 significant digits (as clients print ratios: 16–17, which `exactDecimal` cannot
    /// take) over at most 10^19, rounded correctly to the nearest Double (ties to even): the
    /// quotient m / 10^k is computed with 55–56 significant bits by one 128-bit division, then
    /// rounded with the remainder as the sticky bit, instead of making a `String` for `strtod`.
    /// Nil for a positive power of ten or one below 10^-19.
    private static func longDecimal(_ parts: (mantissa: UInt64, digits: Int, exponent: Int)) -> Double? {
        let mantissa = parts.mantissa, scale = -parts.exponent  // the value is mantissa / 10^scale
        if mantissa == 0 { return 0 }
        guard scale >= 0, scale <= 19 else { return nil }
        if scale == 0 { return Double(mantissa) }  // a correctly rounded conversion
        let divisor = UInt128(powersOfTen64[scale])
        let divisorBits = 128 - divisor.leadingZeroBitCount, mantissaBits = 64 - mantissa.leadingZeroBitCount
        let shift = 55 + divisorBits - mantissaBits  // the quotient then has 55 or 56 bits
        guard shift >= 0 else { return nil }
        let (quotient, remainder) = (UInt128(mantissa) << shift).quotientAndRemainder(dividingBy: divisor)
        let dropped = (128 - quotient.leadingZeroBitCount) - 53  // 2 or 3 bits below the 53 kept
        var significand = UInt64(quotient >> dropped)
        let rest = quotient & ((1 << dropped) - 1), half = UInt128(1) << (dropped - 1)
        if rest > half || (rest == half && (remainder != 0 || significand & 1 == 1)) { significand += 1 }
        // Both factors exact (significand ≤ 2^53, a power of two far from the subnormal range).
        return Double(significand) * Double(sign: .plus, exponent: dropped - shift, significand: 1)
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes — validate the run as UTF-8 in one step, or skip validation
        // altogether when every byte is ASCII (most strings here: ids, enum names).
        var ascii = true
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if ascii { return String(decoding: run, as: UTF8.self) }
                guard let string = String(validating: run, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "invalid UTF-8 in string")
                }
                return string
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw error("control character in string") }
            if c >= 0x80 { ascii = false }
            index += 1
        }
        guard index < bytes.count else { throw error("unterminated string") }
        // Slow path: decode escapes into a byte buffer, then validate.
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                guard let string = String(validating: out, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "invalid UTF-8 in string")
                }
                index += 1
                return string
            }
            if c < 0x20 { throw error("control character in string") }
            if c != UInt8(ascii: "\\") { out.append(c); index += 1; continue }
            index += 1
            guard index < bytes.count else { throw error("unterminated string") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    else { throw error("unpaired surrogate") }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("unpaired surrogate")
                }
                Self.appendUTF8(scalar, to: &out)
            default: throw error("invalid escape")
            }
        }
        throw error("unterminated string")
    }

    /// Appends the UTF-8 encoding of `scalar`, a Unicode scalar value (not a surrogate).
    private static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(0xC0 | UInt8(scalar >> 6))
            out.append(0x80 | UInt8(scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(0xE0 | UInt8(scalar >> 12))
            out.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        default:
            out.append(0xF0 | UInt8(scalar >> 18))
            out.append(0x80 | UInt8(scalar >> 12 & 0x3F))
            out.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
