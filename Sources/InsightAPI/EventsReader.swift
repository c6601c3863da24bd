import CoachingModel
import InsightServices

/// Reads `interaction.events` straight from the request bytes in the common, well-formed case,
/// so that up to 5,000 events do not become a `JSONValue` tree first.
///
/// It accepts only an array of at most `EvaluationSchema.eventCount` objects whose members are
/// those of `EvaluationSchema.EventMember`: `t` (an integer within `EvaluationSchema.eventTimes`,
/// written plainly: no sign, fraction, exponent or leading zero), `type` and `field` (one of their
/// values, written without escapes), each at most once, with `t` and `type` present, times in
/// order, with whitespace where JSON allows it. That is valid JSON, and the tree path
/// (`EvaluationSchema.event`) would read it the same way. Anything else — escapes, other members,
/// other numbers, unknown values, any error — makes it decline, and the parser and the tree path
/// take over and name the offending field.
enum EventsReader {
    /// The events and the offset just past the array, or nil to decline.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (events: [InteractionEvent], end: Int)? {
        var cursor = ByteCursor(bytes: bytes, index: start)
        guard cursor.take(UInt8(ascii: "[")) else { return nil }
        var events: [InteractionEvent] = []
        cursor.skipWhitespace()
        if cursor.take(UInt8(ascii: "]")) { return (events, cursor.index) }
        events.reserveCapacity(64)
        var previous: Int64 = 0
        while true {
            cursor.skipWhitespace()
            guard let event = readEvent(&cursor), event.t >= previous, events.count < EvaluationSchema.eventCount.upperBound else {
                return nil
            }
            previous = event.t
            events.append(event)
            cursor.skipWhitespace()
            if cursor.take(UInt8(ascii: ",")) { continue }
            guard cursor.take(UInt8(ascii: "]")) else { return nil }
            return (events, cursor.index)
        }
    }

    /// By hand rather than through `EvaluationSchema.event.read`, to spare its closures: this
    /// runs up to 5,000 times a request.
    private static func readEvent(_ cursor: inout ByteCursor) -> InteractionEvent? {
        guard cursor.take(UInt8(ascii: "{")) else { return nil }
        var t: Int64?, type: InteractionEventType?, field: InteractionField?
        repeat {
            cursor.skipWhitespace()
            // The member names the reader accepts, each at most once; anything else declines.
            if t == nil, cursor.takeName(EvaluationSchema.EventMember.t) {
                guard cursor.takeColon(), let time = cursor.plainInteger(), EvaluationSchema.eventTimes.contains(time) else { return nil }
                t = time
            } else if type == nil, cursor.takeName(EvaluationSchema.EventMember.type) {
                guard cursor.takeColon(), let text = cursor.plainString(), let value = InteractionEventType(utf8: text) else { return nil }
                type = value
            } else if field == nil, cursor.takeName(EvaluationSchema.EventMember.field) {
                guard cursor.takeColon(), let text = cursor.plainString(), let value = InteractionField(utf8: text) else { return nil }
                field = value
            } else {
                return nil
            }
            cursor.skipWhitespace()
        } while cursor.take(UInt8(ascii: ","))
        guard cursor.take(UInt8(ascii: "}")), let t, let type else { return nil }
        return InteractionEvent(t: t, type: type, field: field)
    }
}
