import JSON
import XCTest

/// The streaming writer must write exactly what `JSONWriter` writes for the same members.
final class JSONObjectWriterTests: XCTestCase {
    func testWritesWhatTheTreeWriterWrites() throws {
        let awkward = "quote \" backslash \\ newline \n tab \t control \u{01} é 😀"
        var object = JSONObjectWriter(capacity: 8)  // small: the buffer must grow
        object.member("id", "ev-1")
        object.member(named: awkward, .string(awkward))
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

        let tree: JSONValue = .object(
            JSONObject([
                ("id", .string("ev-1")), (awkward, .string(awkward)), ("whole", .number(3)), ("fraction", .number(0.1)),
                ("negative", .number(-2.5e-7)), ("yes", .bool(true)), ("no", .bool(false)),
                ("tree", .array([.null, .object(["a": .number(1)])])), ("none", .array([])),
                ("reasons", .array([.string("a"), .string(awkward)])), ("empty", .object(JSONObject())),
                ("outcome", .object(["error": .object(JSONObject([("code", .string("x")), ("detail", .string(awkward))]))])),
                (
                    "items",
                    .array([
                        .object(["n": .number(1)]), .object(JSONObject([("n", .number(2)), ("two", .bool(true))])),
                        .object(["n": .number(3)])
                    ])
                ),
                ("noItems", .array([]))
            ]))
        XCTAssertEqual(String(decoding: written, as: UTF8.self), String(decoding: JSONWriter.bytes(tree), as: UTF8.self))
        XCTAssertEqual(try JSONParser.parse(written), tree)
    }

    /// Whole numbers are written digit by digit: the same text as `Int64`'s description, for the
    /// edges (zero, negative zero, one digit, powers of ten, the largest exact integers) and at random.
    func testWholeNumbersAreWrittenAsIntegers() {
        var values: [Double] = [0, -0.0, 1, -1, 9, 10, -10, 99, 100, 1e15, -1e15, 9_007_199_254_740_991, -9_007_199_254_740_991]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1_000 { values.append(Double(Int64.random(in: -9_007_199_254_740_991...9_007_199_254_740_991, using: &generator))) }
        for value in values {
            var object = JSONObjectWriter(capacity: 4)
            object.member("n", value)
            XCTAssertEqual(String(decoding: object.bytes(), as: UTF8.self), "{\"n\":\(Int64(value))}")
        }
        var beyond = JSONObjectWriter()
        beyond.member("n", 9_007_199_254_740_992.0)  // 2^53: no longer every integer is exact, written as a Double
        XCTAssertEqual(String(decoding: beyond.bytes(), as: UTF8.self), "{\"n\":9007199254740992.0}")
    }

    func testAnEmptyObject() {
        XCTAssertEqual(JSONObjectWriter().bytes(), Array("{}".utf8))
    }
}
