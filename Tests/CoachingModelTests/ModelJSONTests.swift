import XCTest

@testable import CoachingModel

final class ModelJSONTests: XCTestCase {
    func parse(_ s: String) -> Result<JSONValue, JSONParseError> {
        do throws(JSONParseError) {
            return .success(try JSONReader.parse(Array(s.utf8)))
        } catch {
            return .failure(error)
        }
    }

    func testDoublesRoundTripExactly() throws {
        // Values Foundation's JSONSerialization gets wrong on Linux.
        for value in [19306055.916243836, 3.4284910018103024e-06, -5.319280147966936e-57, 0.1,
                      1.0000000180025095e-35, Double.leastNonzeroMagnitude, 1e300, -0.0] {
            guard case .success(.array(let items)) = parse("[\(value)]"),
                  let parsed = items.first?.numberValue
            else { return XCTFail("\(value) did not parse") }
            XCTAssertEqual(parsed.bitPattern, value.bitPattern, "\(value)")
        }
    }

    func testStructure() throws {
        guard case .success(let v) = parse(#" {"a": [1, true, null, "x\u00e9\n"], "b": {}} "#) else {
            return XCTFail()
        }
        XCTAssertEqual(v.objectValue?["a"]?.arrayValue?.count, 4)
        XCTAssertEqual(v.objectValue?["a"]?.arrayValue?[3].stringValue, "x\u{e9}\n")
        XCTAssertEqual(v.objectValue?["b"], .object([:]))
    }

    func testMalformedDocumentsAreRefused() {
        let bad = ["", "{", "[1,]", "{\"a\":1,\"a\":2}", "01", "1.", "-", "[1] x", "\"\\x\"", "nul",
                   "[1e999]", String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
                   "\"\u{01}\"", "{\"a\" 1}", "\"\\ud800\""]
        for text in bad {
            if case .success = parse(text) { XCTFail("accepted \(text.prefix(20))") }
        }
        if case .failure(let e) = parse("[1, 2,, 3]") {
            XCTAssertEqual(e.offset, 6)
            XCTAssertTrue(e.description.contains("byte 6"))
        } else {
            XCTFail()
        }
    }
}
