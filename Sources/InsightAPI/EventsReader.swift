import CoachingModel
import InsightDomain
import InsightServices

/// Reads `interaction.events` straight from the request bytes in the common, well-formed case,
/// so that up to 5,000 events do not become a `JSONValue` tree first.
///
/// It accepts only an array of at most `EvaluationSchema.eventCount` objects whose members are
/// those of `EvaluationSchema.EventMember`: `t` (an integer within `EvaluationSchema.eventTimes`,
/// written plainly: no sign, fraction, exponent or leading zero), `type` and `field` (one of their
/// values, written without escapes; for `type`, also another token name, whose event is skipped
/// and counted), each at most once, with `t` and `type` present, times in
/// order, with whitespace where JSON allows it. That is valid JSON, and the tree path
/// (`EvaluationSchema.event`) would read it the same way. Anything else — escapes, other members,
/// other numbers, unknown values, any error — makes it decline, and the parser and the tree path
/// take over and name the offending field.
enum EventsReader {
    /// What was read: the events of known types, how many were skipped (unknown types), the
    /// JSON values the array held (for the parser's accounting), and the offset just past it.
    struct Read {
        var events: [InteractionEvent] = []
        var skipped = 0
        var values = 1
        var end = 0
    }

    /// The events read, or nil to decline.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Read? {
        var cursor = ByteCursor(bytes: bytes, index: start)
        guard cursor.take(UInt8(ascii: "[")) else { return nil }
        var read = Read()
        cursor.skipWhitespace()
        if cursor.take(UInt8(ascii: "]")) {
            read.end = cursor.index
            return read
        }
        read.events.reserveCapacity(64)
        var previous: Int64 = 0, count = 0
        while true {
            cursor.skipWhitespace()
            guard let (event, skipped, fields) = readEvent(&cursor), event.t >= previous, count < EvaluationSchema.eventCount.upperBound
            else {
                return nil
            }
            previous = event.t
            count += 1
            read.values += fields
            if skipped { read.skipped += 1 } else { read.events.append(event) }
            cursor.skipWhitespace()
            if cursor.take(UInt8(ascii: ",")) { continue }
            guard cursor.take(UInt8(ascii: "]")) else { return nil }
            read.end = cursor.index
            return read
        }
    }

    /// By hand rather than through `EvaluationSchema.event.read`, to spare its closures: this
    /// runs up to 5,000 times a request. `skipped`: the type is a name this version does not know.
    /// `values`: the JSON values the event held (itself and each member's).
    private static func readEvent(_ cursor: inout ByteCursor) -> (InteractionEvent, skipped: Bool, values: Int)? {
        guard cursor.take(UInt8(ascii: "{")) else { return nil }
        var t: Int64?, type: InteractionEventType?, skipped = false, field: InteractionField?, fieldNull = false
        repeat {
            cursor.skipWhitespace()
            // The member names the reader accepts, each at most once; anything else declines.
            if t == nil, cursor.takeName(EvaluationSchema.EventMember.t) {
                guard cursor.takeColon(), let time = cursor.plainInteger(), EvaluationSchema.eventTimes.contains(time) else { return nil }
                t = time
            } else if type == nil && !skipped, cursor.takeName(EvaluationSchema.EventMember.type) {
                guard cursor.takeColon(), let text = cursor.plainString() else { return nil }
                if let value = InteractionEventType(utf8: text) {
                    type = value
                } else {
                    guard (1...EvaluationSchema.maxEventTypeLength).contains(text.count), InteractionSource.isToken(text) else {
                        return nil
                    }
                    skipped = true
                }
            } else if field == nil && !fieldNull, cursor.takeName(EvaluationSchema.EventMember.field) {
                guard cursor.takeColon() else { return nil }
                // `null` means absent.
                if cursor.takeNull() {
                    fieldNull = true
                } else {
                    guard let text = cursor.plainString(), let value = InteractionField(utf8: text) else { return nil }
                    field = value
                }
            } else {
                return nil
            }
            cursor.skipWhitespace()
        } while cursor.take(UInt8(ascii: ","))
        guard cursor.take(UInt8(ascii: "}")), let t, type != nil || skipped else { return nil }
        return (InteractionEvent(t: t, type: type ?? .sessionStart, field: field), skipped, field != nil || fieldNull ? 4 : 3)
    }
}
