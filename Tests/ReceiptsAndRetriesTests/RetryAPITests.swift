import DaemonTesting
import Foundation
import InsightDomain
import JSON
import SQLiteClient
import XCTest

/// Retries of `POST /v1/evaluations` on a real daemon and SQLite file (docs/api.md, "Retries"):
/// the same `requestId` and bytes get the first answer again, marked `Idempotent-Replayed`, also
/// after a restart, with the first answer's receipt and nothing written; other bytes under it are
/// `422 idempotencyKeyReused`; a retry costs a token like any request.
final class RetryAPITests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.inProcess)
        // A bucket that refills one token in 100 s: no test here waits that long.
        (_, key) = try daemon.createCaller(roles: [.evaluate], rate: 0.01, burst: 5)
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
        XCTAssertEqual(again.headers["insight-receipt"], first.headers["insight-receipt"], "the first answer's receipt")
    }

    /// The heads stored, and the leaves they cover.
    func storedHeads() throws -> (heads: Int, leaves: Int) {
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        let row = try XCTUnwrap(
            try db.prepare("SELECT count(*), coalesce(sum(length(leaves)), 0) / 32 FROM receipt_heads").query { ($0.int(0), $0.int(1)) }
                .first)
        return (row.0, row.1)
    }

    func testARetryCostsATokenAndWritesNothing() throws {
        let first = try evaluate(Self.body("txn-1"))
        XCTAssertEqual(first.status, 200)
        let stored = try storedHeads()
        // Four retries take the rest of the burst of 5; each is the first answer, byte for byte,
        // with the first answer's receipt, and adds no head and no leaf.
        for n in 1...4 {
            let again = try evaluate(Self.body("txn-1"))
            XCTAssertEqual(again.status, 200, "retry \(n)")
            XCTAssertEqual(again.headers["idempotent-replayed"], "true")
            XCTAssertEqual(again.body, first.body, "retry \(n): the first answer's bytes")
            XCTAssertEqual(again.headers["insight-receipt"], first.headers["insight-receipt"], "retry \(n): the first receipt")
            XCTAssertEqual(
                again.headers["ratelimit"].map { $0.hasPrefix("\"caller\";r=\(4 - n);") }, true,
                "retry \(n) took a token: \(again.headers["ratelimit"] ?? "no RateLimit")")
        }
        let throttled = try evaluate(Self.body("txn-1"))
        XCTAssertEqual(throttled.status, 429, "a retry with the bucket empty is refused like any request")
        XCTAssertNil(throttled.headers["insight-receipt"])
        XCTAssertEqual(try evaluate(Self.body("txn-2")).status, 429, "and so is a new request")
        let after = try storedHeads()
        XCTAssertEqual(after.heads, stored.heads, "no head was written")
        XCTAssertEqual(after.leaves, stored.leaves, "no leaf was written")
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

    /// The same JSON re-serialized (here pretty-printed) is other bytes: refused, and the
    /// problem says it is the bytes that differ, not the content.
    func testARetryOfTheSameJSONInOtherBytesIsRefusedSayingTheBytesDiffer() throws {
        XCTAssertEqual(try evaluate(Self.body("txn-1")).status, 200)
        let pretty = Self.body("txn-1").replacingOccurrences(of: ",", with: ",\n  ").replacingOccurrences(of: ":", with: ": ")
        let refused = try evaluate(pretty)
        XCTAssertEqual(refused.status, 422)
        XCTAssertEqual(refused.code, "idempotencyKeyReused")
        XCTAssertEqual(refused.string("field"), "requestId")
        XCTAssertEqual(
            refused.string("detail"),
            "The same requestId was sent with other bytes; a retry must repeat the first request's bytes exactly (a re-serialized copy of the same JSON differs), a new request takes a new requestId."
        )
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
