import Crypto
import InsightDomain
import InsightServices
import XCTest

/// A request sent again with its `requestId` (docs/api.md, "Retries"): answered with the stored
/// answer and its receipt, whichever request stored it, and costing a token but no velocity count,
/// evaluation, leaf or head.
final class RetryTests: XCTestCase {
    /// A request with `requestId` whose bytes digest to `body`'s.
    static func request(_ requestId: String?, body: String = "body", account: String = "acct-1") -> EvaluationRequest {
        var request = Fixture.request(account: account, requestId: requestId)
        request.bodyDigest = requestId.map { _ in SHA256.digest(body) }
        return request
    }

    func evaluate(_ f: Fixture, _ request: EvaluationRequest, by caller: Caller) throws(Rejection) -> Evaluated {
        try f.completed { done throws(Rejection) in
            try f.useCases.evaluation.evaluate(request, by: caller, answer: PlainAnswer(), resume: { $0() }, completion: done)
        }
    }

    /// What a retry must repeat is the request as sent: its body and its sandbox override.
    func testTheRetryDigestCoversTheBodyAndTheOverrideAndOnlyARequestWithARequestId() {
        let body = Array(#"{"requestId":"txn-1"}"#.utf8)
        var plain = Fixture.request(account: "acct-1", requestId: "txn-1")
        plain.keepRetryDigest(body: body, override: nil)
        XCTAssertEqual(plain.bodyDigest, SHA256.digest(body + [0]))
        var overridden = Fixture.request(account: "acct-1", requestId: "txn-1")
        overridden.keepRetryDigest(body: body, override: "risk=high")
        XCTAssertEqual(overridden.bodyDigest, SHA256.digest(body + [0] + Array("risk=high".utf8)))
        var other = Fixture.request(account: "acct-1", requestId: "txn-1")
        other.keepRetryDigest(body: body + [32], override: nil)
        XCTAssertNotEqual(other.bodyDigest, plain.bodyDigest)
        var anonymous = Fixture.request(account: "acct-1", requestId: nil)
        anonymous.keepRetryDigest(body: body, override: nil)
        XCTAssertNil(anonymous.bodyDigest, "no requestId, nothing to retry")
    }

    func testARetryGetsTheStoredAnswerAndReceiptAndCostsAToken() throws {
        let f = Fixture()
        let caller = f.caller(rate: 1, burst: 5)
        let first = try evaluate(f, Self.request("txn-1"), by: caller)
        XCTAssertFalse(first.replayed)
        XCTAssertEqual(first.answer, Array("default \(first.eventId) txn-1".utf8), "the answer names the requestId")
        f.clock.advance(ms: 60_000)
        let remaining = f.limiter.status(caller).remaining
        let again = try evaluate(f, Self.request("txn-1"), by: caller)
        XCTAssertTrue(again.replayed)
        XCTAssertNil(again.record, "no evaluation is made")
        XCTAssertEqual(again.eventId, first.eventId)
        XCTAssertEqual(again.answer, first.answer, "the first answer, byte for byte")
        XCTAssertEqual(
            MerkleTree.root(
                fromAuditPath: again.receipt.path, leafHash: MerkleTree.leafHash(of: again.answer),
                index: again.receipt.index, size: again.receipt.head.head.size),
            again.receipt.head.head.root, "the retry's receipt proves its bytes")
        XCTAssertEqual(again.receipt.head, first.receipt.head, "the first answer's head")
        XCTAssertEqual(again.receipt.index, first.receipt.index, "the first answer's leaf")
        XCTAssertTrue(f.store.reissuedAnswers.isEmpty, "no leaf is written for the retry")
        XCTAssertEqual(f.store.received.evaluations.count, 1, "one evaluation stored")
        XCTAssertEqual(f.limiter.status(caller).remaining, remaining - 1, "the retry took a token")
        XCTAssertEqual(again.quota.remaining, remaining - 1, "the answer's quota is after its token")
        XCTAssertEqual(f.counter("insightd_decisions_total"), 1, "the retry is not counted as an evaluation")
        XCTAssertEqual(f.counter("insightd_evaluation_retries_total", ["outcome": "replayed"]), 1)
        // Another requestId, or none, is another evaluation.
        XCTAssertNotEqual(try evaluate(f, Self.request("txn-2"), by: caller).eventId, first.eventId)
        XCTAssertNotEqual(try evaluate(f, Self.request(nil), by: caller).eventId, first.eventId)
        XCTAssertNotEqual(try evaluate(f, Self.request(nil), by: caller).eventId, first.eventId)
        XCTAssertEqual(f.store.received.evaluations.count, 4)
    }

    func testOtherBytesUnderTheSameRequestIdAreRefused() throws {
        let f = Fixture()
        let caller = f.caller()
        _ = try evaluate(f, Self.request("txn-1"), by: caller)
        XCTAssertThrowsError(try evaluate(f, Self.request("txn-1", body: "another body"), by: caller)) { error in
            XCTAssertEqual(error as? Rejection, .requestIdReused)
        }
        XCTAssertEqual(f.store.received.evaluations.count, 1)
        XCTAssertEqual(f.counter("insightd_evaluation_retries_total", ["outcome": "refused"]), 1)
    }

    func testRequestIdsAreTheCallersOwn() throws {
        let f = Fixture()
        let one = f.caller(), two = f.caller(), other = f.caller(tenant: "acme")
        let first = try evaluate(f, Self.request("txn-1"), by: one)
        XCTAssertNotEqual(try evaluate(f, Self.request("txn-1"), by: two).eventId, first.eventId, "another caller's requestId")
        XCTAssertNotEqual(try evaluate(f, Self.request("txn-1"), by: other).eventId, first.eventId, "another tenant's")
        XCTAssertEqual(f.store.received.evaluations.count, 3)
    }

    func testAfterTheConsumptionGraceARequestIdServesANewEvaluation() throws {
        let f = Fixture()
        let caller = f.caller()
        let first = try evaluate(f, Self.request("txn-1"), by: caller)
        f.clock.advance(ms: f.options.consumptionGrace)
        let later = try evaluate(f, Self.request("txn-1"), by: caller)
        XCTAssertFalse(later.replayed)
        XCTAssertNotEqual(later.eventId, first.eventId)
        // Which the next retry gets.
        XCTAssertEqual(try evaluate(f, Self.request("txn-1"), by: caller).eventId, later.eventId)
    }

    func testAThrottledCallersRetryIsRefusedLikeAnyRequest() throws {
        let f = Fixture()
        let caller = f.caller(rate: 1, burst: 2)
        let first = try evaluate(f, Self.request("txn-1"), by: caller)
        XCTAssertTrue(try evaluate(f, Self.request("txn-1"), by: caller).replayed, "the second token")
        XCTAssertThrowsError(try evaluate(f, Self.request("txn-1"), by: caller)) { error in
            guard case .throttled = error as? Rejection else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(f.counter("insightd_evaluation_retries_total", ["outcome": "replayed"]), 1, "the refused one is not")
        XCTAssertTrue(f.store.reissuedAnswers.isEmpty, "nothing written for either")
        f.clock.advance(ms: 1_000)
        XCTAssertEqual(try evaluate(f, Self.request("txn-1"), by: caller).answer, first.answer, "a token later, answered")
    }

    func testTheLoserOfARaceIsAnsweredAsARetry() throws {
        let f = Fixture()
        let caller = f.caller(rate: 1, burst: 5)
        let first = try evaluate(f, Self.request("txn-1"), by: caller)
        // The second looked before the first was stored: its own evaluation is refused by the store.
        f.store.missRetryLookups(1)
        let second = try evaluate(f, Self.request("txn-1"), by: caller)
        XCTAssertTrue(second.replayed)
        XCTAssertEqual(second.quota.remaining, 3, "one token, taken when it was admitted")
        XCTAssertEqual(second.eventId, first.eventId)
        XCTAssertEqual(second.answer, first.answer)
        XCTAssertEqual(f.store.received.evaluations.count, 2, "the loser reached the store")
        XCTAssertEqual(f.counter("insightd_decisions_total"), 1, "and was not counted")
        // With other bytes, the loser is refused.
        f.store.missRetryLookups(1)
        XCTAssertThrowsError(try evaluate(f, Self.request("txn-1", body: "other"), by: caller)) { error in
            XCTAssertEqual(error as? Rejection, .requestIdReused)
        }
    }

    func testARetryFoundAfterARotationOfTheHashKey() throws {
        let f = Fixture()
        let caller = f.caller()
        let first = try evaluate(f, Self.request("txn-1"), by: caller)
        f.hashKeys.replace(try HashKeyring(keys: [Fixture.hashKey, [UInt8](repeating: 0x33, count: 32)]))
        XCTAssertEqual(try evaluate(f, Self.request("txn-1"), by: caller).eventId, first.eventId)
        XCTAssertThrowsError(try evaluate(f, Self.request("txn-1", body: "other"), by: caller))
    }

    func testAStoreThatCannotBeReadRefusesTheRequest() throws {
        let f = Fixture()
        let caller = f.caller()
        f.store.failReads(true)
        XCTAssertThrowsError(try evaluate(f, Self.request("txn-1"), by: caller)) { error in
            XCTAssertEqual(error as? Rejection, .unreadable(.evaluations))
        }
        XCTAssertEqual(f.store.received.evaluations.count, 0)
        XCTAssertNoThrow(try evaluate(f, Self.request(nil), by: caller), "without a requestId, nothing is read")
    }

    func testTheStoredEntryHoldsNoRequestId() throws {
        let f = Fixture()
        let caller = f.caller()
        _ = try evaluate(f, Self.request("txn-SECRET-42"), by: caller)
        XCTAssertFalse(f.store.received.transcript.contains("SECRET"), "the requestId never reaches the store")
        XCTAssertNotNil(f.store.received.evaluations.first?.retry)
    }
}
