import Crypto
import InsightDomain
import InsightServices
import XCTest

/// docs/api.md "POST /v1/labels" and "Tenants": per-item results, idempotency by key, and labels
/// that reach only the tenant's own insights.
final class LabelServiceTests: XCTestCase {
    var f: Fixture!
    var labeller: Caller!
    var insightId = ""

    override func setUpWithError() throws {
        f = Fixture()
        labeller = f.caller([.evaluate, .labels])
        insightId = try f.evaluate(Fixture.request(), by: labeller).insights[0].insightId
    }

    func testEachItemHasItsOwnStatus() throws {
        let items: [Label?] = [
            Fixture.label(insightId), Fixture.label(insightId), Fixture.label(insightId, .confirmedLegitimate),
            Fixture.label("5d1e0000-0000-4000-8000-000000000001"), nil
        ]
        let outcome = try f.label(items, key: "batch-1", body: "body-1", by: labeller)
        XCTAssertEqual(outcome.statuses, [.accepted, .duplicate, .conflict, .unknownInsight, .invalid])
        XCTAssertFalse(outcome.replayed)
    }

    func testTheSameKeyAndBodyReplayTheFirstAnswerAndCountNothingAgain() throws {
        let items: [Label?] = [Fixture.label(insightId), nil]
        let first = try f.label(items, key: "batch-1", body: "body-1", by: labeller)
        let again = try f.label(items, key: "batch-1", body: "body-1", by: labeller)
        XCTAssertEqual(again.statuses, first.statuses)
        XCTAssertTrue(again.replayed)
        XCTAssertEqual(f.counter("insightd_labels_total", ["tenant": "default", "outcome": "confirmedFraud", "result": "accepted"]), 1)
        XCTAssertEqual(f.counter("insightd_labels_total", ["outcome": "invalid", "result": "invalid"]), 1)
    }

    func testTheSameKeyWithAnotherBodyIsRefused() throws {
        _ = try f.label([Fixture.label(insightId)], key: "batch-1", body: "body-1", by: labeller)
        XCTAssertRejects(.idempotencyKeyReused) { () throws(Rejection) in
            try f.label([Fixture.label(insightId, .confirmedLegitimate)], key: "batch-1", body: "body-2", by: labeller)
        }
        // Keys are the labeller's own: another labeller may use the same one.
        let other = f.caller([.labels])
        XCTAssertEqual(try f.label([Fixture.label(insightId)], key: "batch-1", body: "body-2", by: other).statuses, [.duplicate])
    }

    func testABatchThatChangesNothingIsNotKeptUnderItsKey() throws {
        XCTAssertEqual(
            try f.label([Fixture.label("5d1e0000-0000-4000-8000-000000000001")], key: "k", body: "b-1", by: labeller).statuses,
            [.unknownInsight])
        // Not kept: the key is free for another body.
        XCTAssertEqual(try f.label([Fixture.label(insightId)], key: "k", body: "b-2", by: labeller).statuses, [.accepted])
    }

    func testAnotherTenantsInsightIsUnknownBeforeAndAfterItsTenantLabelsIt() throws {
        let acme = f.caller(tenant: "acme"), acmeFraudOps = f.caller([.labels], tenant: "acme")
        let globex = f.caller([.labels], tenant: "globex"), byDefault = f.caller([.labels])
        let acmeInsight = try f.evaluate(Fixture.request(account: "acct-shared"), by: acme).insights[0].insightId
        func status(_ caller: Caller, _ outcome: LabelOutcome, _ key: String) throws -> LabelResultStatus? {
            try f.label([Fixture.label(acmeInsight, outcome, .other)], key: key, body: key, by: caller).statuses.first
        }
        // Never `duplicate` or `conflict`, which would reveal that it exists and how it was labelled.
        XCTAssertEqual(try status(globex, .confirmedFraud, "g-1"), .unknownInsight)
        XCTAssertEqual(try status(acmeFraudOps, .confirmedLegitimate, "a-1"), .accepted)  // inside the tenant: shared
        XCTAssertEqual(try status(globex, .confirmedLegitimate, "g-2"), .unknownInsight)
        XCTAssertEqual(try status(globex, .confirmedFraud, "g-3"), .unknownInsight)
        XCTAssertEqual(try status(byDefault, .confirmedFraud, "d-1"), .unknownInsight)
        XCTAssertEqual(try status(acmeFraudOps, .confirmedFraud, "a-2"), .conflict)
    }

    func testASandboxLabellerCannotLabelProductionInsights() throws {
        let sandbox = f.caller([.labels], environment: .sandbox)
        XCTAssertEqual(try f.label([Fixture.label(insightId)], key: "sb-1", body: "sb-1", by: sandbox).statuses, [.unknownInsight])
    }

    func testOnlyHashesOfTheKeyAndTheBodyReachTheStore() throws {
        let key = "batch-PRIVATE-key-1", body = #"{"labels":[{"note":"BODY-PRIVATE"}]}"#
        _ = try f.label([Fixture.label(insightId)], key: key, body: body, by: labeller)
        let submission = try XCTUnwrap(f.store.received.submissions.first)
        XCTAssertEqual(submission.idempotencyKeyHash, SHA256.digest(Array(key.utf8)))
        XCTAssertEqual(submission.bodyHash, SHA256.digest(Array(body.utf8)))
        XCTAssertEqual(submission.tenant, labeller.tenant)
        XCTAssertEqual(submission.receivedAt, f.clock.now())
        XCTAssertFalse(f.store.received.transcript.contains("PRIVATE"))
    }

    func testAStoreThatCannotWriteIsAStoreRejection() {
        f.store.failWrites(.unavailable("stopping"))
        XCTAssertRejects(.store(.unavailable("stopping"))) { () throws(Rejection) in
            try f.label([Fixture.label(insightId)], key: "k", body: "b", by: labeller)
        }
        XCTAssertEqual(f.counter("insightd_labels_total"), 0)
    }
}
