import DaemonTesting
import Foundation
import InsightDomain
import JSON
import XCTest

/// Retries of `POST /v1/evaluations` on a real daemon and SQLite file (docs/api.md, "Retries"):
/// the same `requestId` and bytes get the first answer again, marked `Idempotent-Replayed`, also
/// after a restart; other bytes under it are `422 idempotencyKeyReused`; a retry costs no token.
final class RetryAPITests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.inProcess)
        (_, key) = try daemon.createCaller(roles: [.evaluate], rate: 1, burst: 5)
    }

    override func tearDown() { daemon = nil }

    static func body(_ requestId: String?, account: String = "acct-retry-1") -> String {
        let id = requestId.map { #""requestId":"\#($0)","# } ?? ""
        return #"{\#(id)"operationCategory":"payment","subject":{"account":"\#(account)"},"#
            + #""insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#
    }

    func evaluate(_ body: String) throws -> TestDaemon.Response {
        try daemon.request("POST", "/v1/evaluations", key: key, json: body)
    }

    func testTheSameRequestIdAndBytesGetTheFirstAnswerAgain() throws {
        let first = try evaluate(Self.body("txn-1"))
        XCTAssertEqual(first.status, 200)
        XCTAssertNil(first.headers["idempotent-replayed"])
        XCTAssertEqual(first.string("requestId"), "txn-1")
        let eventId = try XCTUnwrap(first.string("eventId"))
        XCTAssertTrue(
            String(decoding: first.body, as: UTF8.self).hasPrefix(#"{"eventId":"\#(eventId)","requestId":"txn-1","tenant""#),
            "requestId follows eventId")
        let again = try evaluate(Self.body("txn-1"))
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.headers["idempotent-replayed"], "true")
        XCTAssertEqual(again.body, first.body, "same eventId, insightIds, decision: the same bytes")
        // A retry takes no token: with a burst of 5, four more new requests pass after two retries.
        _ = try evaluate(Self.body("txn-1"))
        for n in 2...5 { XCTAssertEqual(try evaluate(Self.body("txn-\(n)")).status, 200, "request \(n)") }
        XCTAssertEqual(try evaluate(Self.body("txn-6")).status, 429, "the sixth new request is over the burst")
        XCTAssertEqual(try evaluate(Self.body("txn-1")).status, 200, "a retry is answered even so")
    }

    func testOtherBytesUnderTheSameRequestIdAreRefused() throws {
        XCTAssertEqual(try evaluate(Self.body("txn-1")).status, 200)
        let refused = try evaluate(Self.body("txn-1", account: "acct-retry-2"))
        XCTAssertEqual(refused.status, 422)
        XCTAssertEqual(refused.code, "idempotencyKeyReused")
        XCTAssertEqual(refused.string("field"), "requestId")
        XCTAssertNil(refused.headers["insight-receipt"])
        XCTAssertFalse(String(decoding: refused.body, as: UTF8.self).contains("txn-1"), "the requestId is not echoed")
    }

    func testWithoutARequestIdEveryRequestIsANewEvaluation() throws {
        let one = try evaluate(Self.body(nil)), two = try evaluate(Self.body(nil))
        XCTAssertEqual(one.status, 200)
        XCTAssertNotEqual(one.string("eventId"), two.string("eventId"))
        XCTAssertNil(two.headers["idempotent-replayed"])
    }

    func testARetryIsAnsweredFromTheStoreAfterARestart() throws {
        let first = try evaluate(Self.body("txn-1"))
        try daemon.restart()
        let again = try evaluate(Self.body("txn-1"))
        XCTAssertEqual(again.headers["idempotent-replayed"], "true")
        XCTAssertEqual(again.body, first.body)
        // The requestId is not in the database file (only its keyed hash).
        let database = try Data(contentsOf: URL(fileURLWithPath: daemon.service.settings.databasePath))
        XCTAssertNil(database.range(of: Data("txn-1".utf8)), "the requestId was stored")
    }
}
