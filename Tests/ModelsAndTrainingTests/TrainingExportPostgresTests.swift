import DaemonTesting
import Foundation
import InsightControl
import InsightDomain
import InsightPostgres
import JSON
import PostgresTesting
import XCTest

/// insightctl's training commands on the PostgreSQL store (`INSIGHTD_DATABASE_URL`), as an
/// operator of several instances runs them: the caller's flag, and the export of what the
/// store's ledger captured, joined with its label.
final class TrainingExportPostgresTests: XCTestCase {
    func testCallersUpdateAndTrainingExportOnPostgreSQL() throws {
        let server = try TemporaryPostgres.shared()
        let url = server.url(database: try server.createDatabase())
        let environment = ["INSIGHTD_DATABASE_URL": url]
        func insightctl(_ words: String...) -> (status: Int32, output: String) {
            captureStandardOutput { AdminCommand.main(arguments: ["insightctl"] + words, environment: environment) }
        }
        let created = insightctl(
            "callers", "create", "--name", "payments", "--roles", "evaluate,labels",
            "--environment", "production", "--json")
        XCTAssertEqual(created.status, 0)
        let callerId = try XCTUnwrap(try JSONParser.parse(Array(created.output.utf8))["callerId"]?.stringValue)
        let updated = insightctl("callers", "update", callerId, "--training-capture", "on", "--json")
        XCTAssertEqual(updated.status, 0)
        XCTAssertEqual(try JSONParser.parse(Array(updated.output.utf8))["trainingCapture"], .bool(true))

        // What a daemon on this store would write for an evaluation of that caller, and a label.
        let settings = PostgresSettings(url: url)
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey())
        store.start()
        defer { store.stop() }
        let now = SystemClock().now()
        let features = (0..<28).map { $0 == 5 ? Double.nan : Double($0) + 0.5 }
        for (eventId, insightId, vector) in [("ev-pg-1", "in-pg-1", true), ("ev-pg-2", "in-pg-2", true), ("ev-pg-3", "in-pg-3", false)] {
            let record = EvaluationRecord(
                eventId: eventId, callerId: callerId, environment: .production, category: .payment, createdAt: now,
                reportConsumptionBy: now + 900_000, subject: HashedSubject(account: [7, 7, 7], keyId: "k1"),
                insights: [
                    InsightRecord(
                        insightId: insightId, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                        newestModelVersion: "2.0", outcome: .value(.high, reasons: []))
                ],
                trainingVector: vector
                    ? TrainingVector(insightId: insightId, modelVersion: "2.0", tenant: "default", features: features) : nil)
            XCTAssertNoThrow(try completed { store.ledger.record(record, answer: [7], completion: $0) })
        }
        let labelled = try completed { done in
            store.ledger.submit(
                LabelSubmission(
                    callerId: callerId, environment: .production,
                    items: [
                        Label(insightId: "in-pg-1", outcome: .confirmedFraud, fraudType: .techSupportScam, discoveredAt: "2026-12-01"),
                        Label(insightId: "in-pg-3", outcome: .confirmedLegitimate, fraudType: nil, discoveredAt: "2026-12-01")
                    ], idempotencyKeyHash: [1], bodyHash: [2], receivedAt: now), completion: done)
        }
        XCTAssertEqual(labelled, .processed([.accepted, .accepted], replayed: false))

        let day = String(Timestamp.format(now).prefix(10))
        let exported = insightctl("training", "export", "--from", day, "--to", day)
        XCTAssertEqual(exported.status, 0)
        let lines = exported.output.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "the labelled vector only (ev-pg-3's label has no vector)")
        let line = try JSONParser.parse(Array(lines[0].utf8))
        XCTAssertEqual(line["label"]?.stringValue, "confirmedFraud")
        XCTAssertEqual(line["features"]?["keyIntervalCV"], .null, "a missing feature")
        XCTAssertEqual(line["features"]?["sessionSeconds"], .number(0.5))
        for forbidden in ["ev-pg", "in-pg", callerId] { XCTAssertFalse(exported.output.contains(forbidden), forbidden) }
    }

    /// Waits for an asynchronous store operation.
    func completed<T: Sendable>(_ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void) throws -> T {
        let box = ResultBox<T>()
        let done = expectation(description: "completed")
        body { result in
            box.result = result
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return try XCTUnwrap(box.result).get()
    }
}

final class ResultBox<T: Sendable>: @unchecked Sendable {
    // @unchecked: written once before the expectation is fulfilled, read after the wait.
    var result: Result<T, StoreFailure>?
}
