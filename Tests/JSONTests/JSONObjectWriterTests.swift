import JSON
import XCTest

/// The streaming writer must write exactly what `JSONWriter` writes for the same members.
final class JSONObjectWriterTests: XCTestCase {
    func testWritesWhatTheTreeWriterWrites() throws {
        let awkward = "quote \" backslash \\ newline \n tab \t control \u{01} é 😀"
        var object = JSONObjectWriter(capacity: 8)  // small: the buffer must grow
        object.member("id", "ev-1")
        object.member(awkward, awkward)
        object.member("whole", 3)
        object.member("fraction", 0.1)
        object.member("negative", -2.5e-7)
        object.member("yes", true)
        object.member("no", false)
        object.member("tree", JSONValue.array([.null, .object(["a": .number(1)])]))
        object.member("none", strings: [])
        object.member("reasons", strings: ["a", awkward])
        object.member("empty") { _ in }
        object.member("outcome") { outcome in
            outcome.member("error") { error in
                error.member("code", "x")
                error.member("detail", awkward)
            }
        }
        object.member("items", objects: [1, 2, 3]) { item, n in
            item.member("n", Double(n))
            if n == 2 { item.member("two", true) }
        }
        object.member("noItems", objects: [Int]()) { _, _ in XCTFail("no element") }
        let written = object.bytes()

        let tree: JSONValue = .object(JSONObject([
            ("id", .string("ev-1")), (awkward, .string(awkward)), ("whole", .number(3)), ("fraction", .number(0.1)),
            ("negative", .number(-2.5e-7)), ("yes", .bool(true)), ("no", .bool(false)),
            ("tree", .array([.null, .object(["a": .number(1)])])), ("none", .array([])),
            ("reasons", .array([.string("a"), .string(awkward)])), ("empty", .object(JSONObject())),
            ("outcome", .object(["error": .object(JSONObject([("code", .string("x")), ("detail", .string(awkward))]))])),
            ("items", .array([.object(["n": .number(1)]), .object(JSONObject([("n", .number(2)), ("two", .bool(true))])),
                              .object(["n": .number(3)])])),
            ("noItems", .array([])),
        ]))
        XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: JSONWriter.bytes(tree), as: UTF8.self))
        XCTAssertEqual(try JSONParser.parse(written), tree)
    }

    func testAnEmptyObject() {
        XCTAssertEqual(JSONObjectWriter().bytes(), Array("{}".utf8))
    }
}
