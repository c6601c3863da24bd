import JSON
import XCTest

final class JSONTests: XCTestCase {
    func testParsesEveryKind() throws {
        let value = try JSONParser.parse(#" {"a": [1, -2.5e2, true, false, null, "x\u00e9\n\"\ud83d\ude00"], "b": {}} "#)
        guard case .object(let object) = value else { return XCTFail("not an object") }
        XCTAssertEqual(object.keys, ["a", "b"])
        XCTAssertEqual(
            object["a"],
            .array([
                .number(1), .number(-250), .bool(true), .bool(false), .null,
                .string("xé\n\"😀")
            ]))
        XCTAssertEqual(object["b"], .object(JSONObject()))
    }

    func testRejectsMalformedDocuments() {
        let cases: [(String, String)] = [
            ("", "unexpected end"),
            ("{", "expected a member name"),
            (#"{"a":1,}"#, "expected a member name"),
            ("[1,]", "unexpected character"),
            ("01", "leading zero"),
            ("1.", "invalid number"),
            ("-", "invalid number"),
            ("1e999", "out of range"),
            (#""abc"#, "unterminated"),
            ("\"a\u{01}b\"", "control character"),
            (#""\x""#, "invalid escape"),
            (#""\ud800""#, "unpaired surrogate"),
            (#""\udc00""#, "unpaired surrogate"),
            (#"{"a":1,"a":2}"#, "duplicate member"),
            ("{} {}", "after the document"),
            ("tru", "unexpected end"),
            ("nul1", "invalid literal"),
            ("'a'", "unexpected character")
        ]
        for (input, expected) in cases {
            XCTAssertThrowsError(try JSONParser.parse(input), input) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(input): \(error)")
            }
        }
    }

    func testRejectsInvalidUTF8() {
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]))
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0x5C, 0x6E, 0xFF, 0x22]))
    }

    func testDepthIsBounded() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        XCTAssertThrowsError(try JSONParser.parse(deep)) { error in
            XCTAssertTrue("\(error)".contains("nesting deeper"))
        }
        let ok = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        XCTAssertNoThrow(try JSONParser.parse(ok))
    }

    func testWriterRoundTrips() throws {
        let value: JSONValue = .object([
            "s": .string("q\"\\\u{01}\té"), "i": .number(42), "f": .number(0.5), "n": .null,
            "a": .array([.bool(true), .number(-3)])
        ])
        let text = JSONWriter.string(value)
        XCTAssertEqual(text, #"{"s":"q\"\\\u0001\té","i":42,"f":0.5,"n":null,"a":[true,-3]}"#)
        XCTAssertEqual(try JSONParser.parse(text), value)
    }

    /// Strings are checked for characters to escape eight bytes at a time: every length around
    /// the word size, every escaped character at every position, against a plain escaper.
    func testStringsAreEscapedExactlyAtEveryPositionAndLength() throws {
        func reference(_ s: String) -> String {
            var out: [UInt8] = [0x22]
            for unit in s.utf8 {
                switch unit {
                case 0x22: out += Array(#"\""#.utf8)
                case 0x5C: out += Array(#"\\"#.utf8)
                case 0x0A: out += Array(#"\n"#.utf8)
                case 0x0D: out += Array(#"\r"#.utf8)
                case 0x09: out += Array(#"\t"#.utf8)
                case 0..<0x20: out += Array(String(format: #"\u%04x"#, unit).utf8)
                default: out.append(unit)
                }
            }
            return String(decoding: out + [0x22], as: UTF8.self)
        }
        let specials: [Character] = ["\"", "\\", "\u{0}", "\u{1}", "\n", "\r", "\t", "\u{1F}"]
        let neighbours: [Character] = [" ", "!", "#", "[", "]", "\u{7F}", "~", "0"]  // 0x20, 0x21, 0x23, 0x5B, 0x5D...
        for length in 0...20 {
            let plain = String(repeating: "a", count: length)
            XCTAssertEqual(JSONWriter.string(.string(plain)), reference(plain))
            for position in 0..<max(length, 1) where length > 0 {
                for special in specials + neighbours {
                    var characters = Array(plain)
                    characters[position] = special
                    let s = String(characters)
                    let written = JSONWriter.string(.string(s))
                    XCTAssertEqual(written, reference(s), "\(s.debugDescription)")
                    XCTAssertEqual(try JSONParser.parse("[\(written)]")[0]?.stringValue, s)
                }
            }
        }
        for s in ["é", "😀 and \"quotes\"", "long plain text with spaces and digits 0123456789", "ü\u{1}ü\u{1}ü\u{1}ü"] {
            XCTAssertEqual(JSONWriter.string(.string(s)), reference(s))
        }
    }

    func testDoublesRoundTripExactly() throws {
        // Model thresholds and leaves must come back as the exact doubles written; these are
        // values Foundation's JSONSerialization returns a few ulps off on Linux.
        for value in [
            19306055.916243836, 3.4284910018103024e-06, -5.319280147966936e-57, 0.1,
            1.0000000180025095e-35, Double.leastNonzeroMagnitude, 1e300, -0.0
        ] {
            let parsed = try XCTUnwrap(try JSONParser.parse("[\(value)]")[0]?.numberValue)
            XCTAssertEqual(parsed.bitPattern, value.bitPattern, "\(value)")
        }
    }

    /// Numbers read without strtod (integers, and decimals within Clinger's fast path) equal
    /// what strtod makes of the same text, sign, leading zeros after the point, exponents and
    /// 16- and 17-digit mantissas (which fall back) included.
    func testNumbersEqualStrtod() throws {
        var generator = SystemRandomNumberGenerator()
        var texts = [
            "0", "-0", "0.0", "-0.0", "1e22", "1e23", "9007199254740993", "9007199254740992", "0.1", "0.000123",
            "123.456e-5", "1E+05", "5e-324", "1.7976931348623157e308", "0.6672111637794805", "0.044444444444444446"
        ]
        for _ in 0..<20_000 {
            let digits = (0..<Int.random(in: 1...18, using: &generator)).map { _ in String(Int.random(in: 0...9, using: &generator)) }
                .joined()
            let whole = digits.first == "0" && digits.count > 1 ? "1" + digits.dropFirst() : digits
            var text = Bool.random(using: &generator) ? "-" : ""
            let point = Int.random(in: 0...whole.count, using: &generator)
            text += point == 0 || point == whole.count ? whole : "\(whole.prefix(point)).\(whole.dropFirst(point))"
            if Int.random(in: 0..<3, using: &generator) == 0 { text += "e\(Int.random(in: -30...30, using: &generator))" }
            texts.append(text)
        }
        for text in texts {
            guard case .number(let parsed) = try JSONParser.parse(text) else { return XCTFail(text) }
            let expected = try XCTUnwrap(Double(text), text)
            XCTAssertEqual(parsed.bitPattern, expected.bitPattern, text)
        }
    }

    /// 16–19 significant digits (what clients print for ratios) go through a 128-bit quotient;
    /// it must round exactly as `strtod` does, ties to even included.
    func testLongDecimalsRoundAsStrtodDoes() throws {
        var generator = SystemRandomNumberGenerator()
        var texts = [
            "283.2834645669291", "0.6672111637794805", "0.03787878787878788", "0.044444444444444446",
            "0.08273322422258593", "0.30000000000000004", "1.0000000000000002", "9999999999999999999",
            "0.9999999999999999999", "1844674407370955161.5", "1.000000000000000000", "12345678901234567.89e-5",
            "4.9406564584124654e-300", "0.1000000000000000055511151231257827", "18446744073709551615",
            "9007199254740993", "9007199254740995", "0.0000000000000000001", "1e-19", "1234567890123456789e-19"
        ]
        for _ in 0..<60_000 {
            let count = Int.random(in: 16...19, using: &generator)
            var digits = (0..<count).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) }
            if digits[0] == "0" { digits[0] = "7" }
            let point = Int.random(in: 0...count, using: &generator)
            var text =
                point == 0
                ? "0." + String(digits) : point == count ? String(digits) : String(digits[..<point]) + "." + String(digits[point...])
            if Int.random(in: 0..<4, using: &generator) == 0 { text += "e\(Int.random(in: -6...4, using: &generator))" }
            texts.append(text)
        }
        // Exact midpoints between neighbouring Doubles of [2^50, 2^53), whose decimals are short:
        // there the ulp is 2^(b - 52) for the binade [2^b, 2^(b+1)), and a Double is k ulps with
        // k in [2^52, 2^53); the midpoint k + 1/2 ulps, counted in eighths, is (2k + 1) << (b - 50).
        let eighths = ["0", "125", "25", "375", "5", "625", "75", "875"]
        for binade in 50...52 {
            for _ in 0..<2_000 {
                let k = UInt64.random(in: (UInt64(1) << 52)..<(UInt64(1) << 53), using: &generator)
                let midpoint = (2 * k + 1) << (binade - 50)
                texts.append("\(midpoint >> 3).\(eighths[Int(midpoint & 7)])")
            }
        }
        for text in texts {
            guard case .number(let parsed) = try JSONParser.parse(text) else { return XCTFail(text) }
            let expected = try XCTUnwrap(Double(text), text)
            XCTAssertEqual(parsed.bitPattern, expected.bitPattern, text)
        }
    }

    func testAccessors() throws {
        let v = try JSONParser.parse(#"{"a":[1,"x",true,2.5],"o":{"k":null}}"#)
        XCTAssertEqual(v["a"]?[0]?.intValue, 1)
        XCTAssertEqual(v["a"]?[1]?.stringValue, "x")
        XCTAssertEqual(v["a"]?[2]?.boolValue, true)
        XCTAssertNil(v["a"]?[3]?.intValue)
        XCTAssertEqual(v["a"]?[3]?.numberValue, 2.5)
        XCTAssertNil(v["a"]?[4])
        XCTAssertEqual(v["o"]?["k"], .null)
        XCTAssertNil(v["missing"])
        XCTAssertNil(v["a"]?["k"])
        XCTAssertEqual(v.objectValue?.keys, ["a", "o"])
    }

    /// Only a name that looks like a schema's may be repeated in an error.
    func testAPlainMemberNameIsAShortWord() {
        for name in ["a", "interaction", "newCounterParty", "key_interval2", "A", String(repeating: "x", count: 64)] {
            XCTAssertTrue(JSONMemberName.isPlain(name), name)
        }
        for name in [
            "", "_a", "1a", "a-b", "a.b", "a b", "jane@example.com", "é", "a\u{0}", String(repeating: "x", count: 65), "ａ"
        ] {
            XCTAssertFalse(JSONMemberName.isPlain(name), name)
        }
    }
}
