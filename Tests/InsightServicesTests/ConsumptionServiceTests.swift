import InsightDomain
import InsightServices
import XCTest

/// docs/api.md "POST /v1/evaluations/{eventId}/consumption": one consumption report per evaluation,
/// by its caller, in its environment.
final class ConsumptionServiceTests: XCTestCase {
    var f: Fixture!
    var caller: Caller!
    var record: EvaluationRecord!

    override func setUpWithError() throws {
        f = Fixture()
        caller = f.caller()
        record = try f.evaluate(Fixture.request(insights: [Fixture.coaching, Fixture.coaching]), by: caller)
    }

    func testAReportIsRecordedOnceAndTheSameReportAgainChangesNothing() throws {
        let used = [record.insights[0].insightId]
        try f.report(.usedIncreasedFriction, on: record.eventId, used: used, by: caller)
        try f.report(.usedIncreasedFriction, on: record.eventId, used: used, by: caller)
        XCTAssertEqual(
            f.counter("insightd_consumption_reports_total", ["status": "usedIncreasedFriction", "timeliness": "onTime"]), 1,
            "a repeated report was counted again")
        XCTAssertEqual(f.store.received.reports.first?.reportedAt, f.clock.now())
        XCTAssertEqual(f.store.received.reports.first?.callerId, caller.callerId)
    }

    func testADifferentReportForTheSameEvaluationIsAConflictNamingTheFirst() throws {
        try f.report(.usedIncreasedFriction, on: record.eventId, used: [record.insights[0].insightId], by: caller)
        XCTAssertRejects(.consumptionConflict(existing: .usedIncreasedFriction)) { () throws(Rejection) in
            try f.report(.notUsedNotNeeded, on: record.eventId, by: caller)
        }
        XCTAssertRejects(.consumptionConflict(existing: .usedIncreasedFriction)) { () throws(Rejection) in
            try f.report(.usedIncreasedFriction, on: record.eventId, used: [record.insights[1].insightId], by: caller)
        }
    }

    func testAnUnknownEvaluationIsNotFound() {
        XCTAssertRejects(.evaluationNotFound) { () throws(Rejection) in
            try f.report(.notUsedNotNeeded, on: "00000000-0000-4000-8000-000000000000", by: caller)
        }
    }

    func testAnotherCallersEvaluationIsNotFound() throws {
        XCTAssertRejects(.evaluationNotFound) { () throws(Rejection) in
            try f.report(.notUsedNotNeeded, on: record.eventId, by: f.caller())
        }
        try f.report(.notUsedNotNeeded, on: record.eventId, by: caller)
    }

    func testAnotherEnvironmentsEvaluationIsNotFound() throws {
        let sandbox = f.caller(environment: .sandbox)
        XCTAssertRejects(.evaluationNotFound) { () throws(Rejection) in try f.report(.notUsedNotNeeded, on: record.eventId, by: sandbox) }
        let sandboxRecord = try f.evaluate(Fixture.request(), by: sandbox)
        XCTAssertRejects(.evaluationNotFound) { () throws(Rejection) in
            try f.report(.notUsedNotNeeded, on: sandboxRecord.eventId, by: caller)
        }
    }

    func testAnotherTenantsEvaluationIsNotFound() throws {
        let acme = f.caller(tenant: "acme"), globex = f.caller(tenant: "globex")
        let acmeRecord = try f.evaluate(Fixture.request(account: "acct-shared"), by: acme)
        XCTAssertRejects(.evaluationNotFound) { () throws(Rejection) in try f.report(.notUsedNotNeeded, on: acmeRecord.eventId, by: globex)
        }
        try f.report(.notUsedNotNeeded, on: acmeRecord.eventId, by: acme)
    }

    func testAnInsightIdNotInTheEvaluationIsNamedByItsPositionAndNothingIsRecorded() throws {
        XCTAssertRejects(.unknownInsightId(index: 1)) { () throws(Rejection) in
            try f.report(.usedIncreasedFriction, on: record.eventId, used: [record.insights[0].insightId, "nope"], by: caller)
        }
        let other = try f.evaluate(Fixture.request(), by: caller)
        XCTAssertRejects(.unknownInsightId(index: 0)) { () throws(Rejection) in
            try f.report(.usedIncreasedFriction, on: record.eventId, used: [other.insights[0].insightId], by: caller)
        }
        // Nothing was recorded: a different report is still accepted.
        try f.report(.notUsedNotNeeded, on: record.eventId, by: caller)
    }

    func testAnIdLongerThanAnyEvaluationIdIsNotFoundWithoutAStoreRoundTrip() {
        XCTAssertRejects(.evaluationNotFound) { () throws(Rejection) in
            try f.report(.notUsedNotNeeded, on: String(repeating: "x", count: 65), by: caller)
        }
        XCTAssertTrue(f.store.received.reports.isEmpty, "an id no evaluation can have reached the store")
        XCTAssertRejects(.evaluationNotFound) { () throws(Rejection) in
            try f.report(.notUsedNotNeeded, on: String(repeating: "x", count: 64), by: caller)
        }
        XCTAssertEqual(f.store.received.reports.count, 1)
    }

    func testAReportAfterItsDeadlineCountsAsLateNotMissing() throws {
        f.clock.advance(ms: 15 * 60_000)
        try f.report(.usedUnchangedFriction, on: record.eventId, by: caller)  // at the deadline: on time
        let late = try f.evaluate(Fixture.request(), by: caller)
        f.clock.advance(ms: 15 * 60_000 + 1)
        try f.report(.usedUnchangedFriction, on: late.eventId, by: caller)
        XCTAssertEqual(f.counter("insightd_consumption_reports_total", ["status": "usedUnchangedFriction", "timeliness": "onTime"]), 1)
        XCTAssertEqual(f.counter("insightd_consumption_reports_total", ["status": "usedUnchangedFriction", "timeliness": "late"]), 1)
    }

    func testAStoreThatCannotWriteIsAStoreRejection() {
        f.store.failWrites(.overloaded)
        XCTAssertRejects(.store(.overloaded)) { () throws(Rejection) in try f.report(.notUsedNotNeeded, on: record.eventId, by: caller) }
        XCTAssertEqual(f.counter("insightd_consumption_reports_total"), 0)
    }
}
