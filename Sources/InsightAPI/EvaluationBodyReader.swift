import InsightServices

/// Reads a whole `POST /v1/evaluations` body straight from its bytes in the common, valid case,
/// so that its members do not become a `JSONValue` tree of keys and strings first and then get
/// decoded from it (which would be a sizeable share of an evaluation's work).
///
/// It reads `EvaluationSchema.root` through `BodyObject.read`, and so accepts only what the tree
/// path (`EvaluationRequest.decode(_:)`) would accept and read the same way: an object of the
/// known members, each at most once; strings of printable ASCII without escapes, within their
/// limits; integers written plainly, within theirs; `true`/`false` for flags;
/// `interaction.events` and `.summary` as `EventsReader` and `SummaryReader` read them; `null`
/// for an optional member, read as absent; whitespace where JSON allows it and nothing after the
/// object. Anything else — an unknown or repeated member, a required member sent as null, an escape, a non-ASCII or over-long string, an unknown category, a
/// request id that looks like personal data, any syntax error — makes it decline, and the parser
/// and the tree path take over and name the offending field. A differential test holds the two
/// paths to the same result.
enum EvaluationBodyReader {
    /// The request, or nil to decline.
    static func read(_ body: [UInt8]) -> EvaluationRequest? {
        body.withUnsafeBufferPointer { bytes in
            var cursor = ByteCursor(bytes: bytes, index: 0)
            cursor.skipWhitespace()
            guard let request = EvaluationSchema.root.read(&cursor) else { return nil }
            cursor.skipWhitespace()
            return cursor.index == bytes.count ? request : nil
        }
    }
}
