import XCTest
@testable import InsightDomain

final class EvaluationIdentifiersTests: XCTestCase {
    func testInsightIdsAreMadeFromTheEventId() {
        let ids = EvaluationIdentifiers.make(insights: 4, milliseconds: 1_796_205_600_123)
        XCTAssertEqual(ids.eventId.count, 36)
        XCTAssertTrue(ids.eventId.hasSuffix("0"))
        // Version 7, the millisecond up front, as every event id before.
        XCTAssertTrue(ids.eventId.hasPrefix("01a23632-5d7b-7"), ids.eventId)
        XCTAssertEqual(ids.insightIds, (1...4).map { String(ids.eventId.dropLast()) + String($0) })
        for (position, insightId) in ids.insightIds.enumerated() {
            XCTAssertEqual(EvaluationIdentifiers.insightId(eventId: ids.eventId, position: position), insightId)
            XCTAssertTrue(EvaluationIdentifiers.isMade(insightId, eventId: ids.eventId, position: position))
            XCTAssertFalse(EvaluationIdentifiers.isMade(insightId, eventId: ids.eventId, position: position + 1))
            let origin = EvaluationIdentifiers.origin(ofInsightId: insightId)
            XCTAssertEqual(origin?.eventId, ids.eventId)
            XCTAssertEqual(origin?.position, position)
        }
        XCTAssertNotEqual(
            EvaluationIdentifiers.make(insights: 1, milliseconds: 5).eventId,
            EvaluationIdentifiers.make(insights: 1, milliseconds: 5).eventId)
    }

    func testIdsOfAnotherShapeNameNothing() {
        let made = EvaluationIdentifiers.make(insights: 1, milliseconds: 1).eventId
        // An event id that does not end in 0, or is not 36 characters, names no insights.
        XCTAssertNil(EvaluationIdentifiers.insightId(eventId: String(made.dropLast()) + "7", position: 0))
        XCTAssertNil(EvaluationIdentifiers.insightId(eventId: "e10", position: 0))
        XCTAssertNil(EvaluationIdentifiers.insightId(eventId: made, position: -1))
        XCTAssertNil(EvaluationIdentifiers.insightId(eventId: made, position: EvaluationIdentifiers.maxInsights))
        XCTAssertNotNil(EvaluationIdentifiers.insightId(eventId: made, position: EvaluationIdentifiers.maxInsights - 1))
        // An insight id names an evaluation only when it ends in 1 through 8.
        for last in ["0", "9", "a", "f"] {
            XCTAssertNil(EvaluationIdentifiers.origin(ofInsightId: String(made.dropLast()) + last), last)
        }
        XCTAssertNil(EvaluationIdentifiers.origin(ofInsightId: "i1"))
        // An id with the right ending but another evaluation's prefix is not made from this one.
        let other = EvaluationIdentifiers.make(insights: 1, milliseconds: 1)
        XCTAssertFalse(EvaluationIdentifiers.isMade(other.insightIds[0], eventId: made, position: 0))
        XCTAssertFalse(EvaluationIdentifiers.isMade("e1", eventId: "e0", position: 0))
        // One byte changed anywhere in the 35 before the last: not made from this evaluation.
        let insight = Array(EvaluationIdentifiers.make(insights: 1, milliseconds: 1).insightIds[0].utf8)
        let event = String(decoding: insight.dropLast() + [UInt8(ascii: "0")], as: UTF8.self)
        XCTAssertTrue(EvaluationIdentifiers.isMade(String(decoding: insight, as: UTF8.self), eventId: event, position: 0))
        for i in 0..<35 {
            var changed = insight
            changed[i] = changed[i] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
            XCTAssertFalse(
                EvaluationIdentifiers.isMade(String(decoding: changed, as: UTF8.self), eventId: event, position: 0),
                "byte \(i)")
        }
        XCTAssertNil(EvaluationIdentifiers.origin(ofInsightId: ""))
    }
}
