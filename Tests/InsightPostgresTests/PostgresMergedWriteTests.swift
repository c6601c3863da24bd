import Foundation
import InsightDomain
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import Synchronization
import XCTest

/// The evaluations of one batch of the writer written by one statement (`EvaluationRows`):
/// the rows are those each evaluation's own statement writes, every job is answered as its own,
/// and a job that fails still fails alone, beside jobs of other kinds.
final class PostgresMergedWriteTests: PostgresStoreTestCase {
    func testTheEvaluationsOfABatchAreWrittenByOneStatementAsEachWouldBeAlone() throws {
        let store = try instance()
        let evaluations = (0..<40).map(Self.varied)
        let answers = Answers()
        try holdingTheNextBatch(of: store) {
            for evaluation in evaluations {
                store.ledger.record(evaluation, answer: [7], completion: answers.completion(evaluation.eventId))
            }
        }
        let all = answers.wait(for: evaluations.count)
        for evaluation in evaluations {
            guard case .success = all[evaluation.eventId] else {
                XCTFail("\(evaluation.eventId): \(String(describing: all[evaluation.eventId]))"); continue
            }
        }
        XCTAssertEqual(store.writer.mergedStatementsCommitted.load(ordering: .relaxed), 1, "one statement wrote the batch")

        // The same evaluations, each by its own statement, into another database.
        let reference = PostgresSettings(url: server.url(database: try server.createDatabase()))
        let (migrated, _) = try PostgresStore.open(settings: reference, now: 1, receipts: .withEphemeralKey(), observer: nil)
        migrated.stop()
        let alone = try reference.connect()
        for evaluation in evaluations {
            let statement = try EvaluationRows(evaluation).statement
            try alone.query(try alone.prepare(statement.name, statement.sql), statement.parameters)
        }
        let merged = try Self.rows(try settings.connect()), expected = try Self.rows(alone)
        XCTAssertGreaterThan(expected.count, evaluations.count, "insights were written")
        XCTAssertEqual(merged, expected)
    }

    func testAFailingEvaluationOfAMergedBatchFailsAloneBesideJobsOfOtherKinds() throws {
        let commits = Mutex<[PostgresWriter.Commit]>([])
        let store = try instance(observer: { commit in commits.withLock { $0.append(commit) } })
        let answers = Answers()
        for id in ["dup", "reported"] {
            store.ledger.record(Self.evaluation(id, insights: ["\(id)-i"]), answer: [7], completion: answers.completion("pre-\(id)"))
        }
        XCTAssertEqual(answers.wait(for: 2).values.filter { if case .success = $0 { true } else { false } }.count, 2)
        let ids = (0..<12).map { "e\($0)" }
        let report = Mutex<Result<ConsumptionResult, StoreFailure>?>(nil)
        let labels = Mutex<Result<LabelSubmissionResult, StoreFailure>?>(nil)
        let otherJobs = DispatchGroup()
        let mergedBefore = store.writer.mergedStatementsCommitted.load(ordering: .relaxed)
        try holdingTheNextBatch(of: store) {
            for (n, id) in ids.enumerated() {
                store.ledger.record(
                    Self.evaluation(id, insights: (0..<(n % 4)).map { "\(id)-i\($0)" }),
                    answer: [7], completion: answers.completion(id))
                if n == 3 {
                    // The same event id as a stored evaluation.
                    store.ledger.record(Self.evaluation("dup"), answer: [7], completion: answers.completion("dup"))
                }
                if n == 5 {
                    // A new evaluation whose insight id another evaluation keeps.
                    store.ledger.record(
                        Self.evaluation("taken", insights: ["reported-i"]), answer: [7], completion: answers.completion("taken"))
                    otherJobs.enter()
                    store.ledger.report(
                        ConsumptionReport(
                            eventId: "reported", callerId: "c1", environment: .production,
                            status: .usedIncreasedFriction, insightIdsUsed: ["reported-i"],
                            reportedAt: 1_500)
                    ) { result in
                        report.withLock { $0 = result }
                        otherJobs.leave()
                    }
                }
                if n == 8 {
                    var vector = Self.evaluation("vector", insights: ["vector-i"])
                    vector.trainingVector = TrainingVector(
                        insightId: "vector-i", modelVersion: "2.0", tenant: "default",
                        features: [1, .nan, 3])
                    store.ledger.record(vector, answer: [7], completion: answers.completion("vector"))
                    otherJobs.enter()
                    store.ledger.submit(
                        LabelSubmission(
                            callerId: "c1", environment: .production,
                            items: [
                                Label(
                                    insightId: "dup-i", outcome: .confirmedFraud, fraudType: .techSupportScam,
                                    discoveredAt: "2027-01-15")
                            ],
                            idempotencyKeyHash: Array("k1".utf8), bodyHash: Array("b1".utf8), receivedAt: 5_000)
                    ) { result in
                        labels.withLock { $0 = result }
                        otherJobs.leave()
                    }
                }
            }
        }
        let all = answers.wait(for: ids.count + 3)
        XCTAssertEqual(otherJobs.wait(timeout: .now() + 30), .success)
        for id in ids + ["vector"] {
            guard case .success = all[id] else { XCTFail("\(id): \(String(describing: all[id]))"); continue }
        }
        for id in ["dup", "taken"] {
            guard case .failure(.unavailable) = all[id] else { XCTFail("\(id): \(String(describing: all[id]))"); continue }
        }
        XCTAssertEqual(report.withLock { $0 }, .success(.recorded(.onTime)))
        XCTAssertEqual(labels.withLock { $0 }, .success(.processed([.accepted], replayed: false)))
        let batch = commits.withLock { $0 }.first { $0.size == ids.count + 5 }
        XCTAssertEqual(batch?.failed, 2, "one batch of \(ids.count + 5): \(commits.withLock { $0 }.map { ($0.size, $0.failed) })")
        XCTAssertEqual(
            store.writer.mergedStatementsCommitted.load(ordering: .relaxed), mergedBefore,
            "the merged statement failed, each job's own was committed")

        let check = try settings.connect()
        XCTAssertEqual(try check.query("SELECT count(*) FROM evaluations").first?.int64(0), Int64(2 + ids.count + 1))
        XCTAssertEqual(try check.query("SELECT count(*) FROM training_vectors").first?.int64(0), 1)
        // Each evaluation's insights on it, as many as it had.
        for (n, id) in ids.enumerated() {
            let stored = try check.query(
                """
                SELECT string_agg(i.insight_id, ',' ORDER BY i.slot) FROM evaluations e
                JOIN insights i ON i.slot BETWEEN e.number * 8 AND e.number * 8 + 7 WHERE e.event_id = $1
                """, [.text(id)]
            ).first?.text(0)
            XCTAssertEqual(stored, n % 4 == 0 ? nil : (0..<(n % 4)).map { "\(id)-i\($0)" }.joined(separator: ","), id)
        }
    }

    func testAnArrayElementSpellsEveryValueAsTheServerReadsIt() throws {
        let connection = try settings.connect()
        let texts: [String?] = ["", "a,b", "{x}", "q\"uo\\te", "NULL", " é ", nil]
        let bytes: [PostgresValue?] = [.bytea([]), .bytea([0, 0x22, 0x5C, 0x2C, 0xFF]), nil]
        let integers: [PostgresValue?] = [.int64(-1), .int64(.max), nil]
        let row = try connection.query(
            """
            SELECT $1::text[] = $2::text[], $3::bytea[] = ARRAY['\\x'::bytea, '\\x00225c2cff'::bytea, NULL],
                   $4::bigint[] = ARRAY[-1, 9223372036854775807, NULL]::bigint[]
            """,
            [
                SQLValues.arrayLiteral(texts.map { SQLValues.arrayElement($0.map(PostgresValue.text)) }),
                SQLValues.textArray(texts), SQLValues.arrayLiteral(bytes.map(SQLValues.arrayElement)),
                SQLValues.arrayLiteral(integers.map(SQLValues.arrayElement))
            ]
        ).first
        XCTAssertEqual(row?.bool(0), true)
        XCTAssertEqual(row?.bool(1), true)
        XCTAssertEqual(row?.bool(2), true)
        let stored = try connection.query("SELECT unnest($1::text[])", [SQLValues.textArray(texts)])
        XCTAssertEqual(stored.map { $0.text(0) }, texts)
    }

    // MARK: Helpers

    /// Answers of `record`, by name.
    final class Answers: Sendable {
        private let results = Mutex<[String: Result<Void, StoreFailure>]>([:])
        private let arrived = DispatchSemaphore(value: 0)

        func completion(_ name: String) -> @Sendable (Result<Receipt, StoreFailure>) -> Void {
            { result in
                self.results.withLock { $0[name] = result.map { _ in () } }
                self.arrived.signal()
            }
        }

        func wait(for count: Int) -> [String: Result<Void, StoreFailure>] {
            for _ in 0..<count where arrived.wait(timeout: .now() + 30) != .success {
                XCTFail("an answer missing after 30 s")
                break
            }
            return results.withLock { $0 }
        }
    }

    /// Runs `queue` while the writer waits on a lock, so that what it queues is the writer's
    /// next batch, whole.
    func holdingTheNextBatch(of store: PostgresStore, _ queue: () -> Void) throws {
        let blocker = try settings.connect()
        try blocker.execute("BEGIN")
        try blocker.query("SELECT pg_advisory_xact_lock($1)", [.int64(SQLValues.lockKey("report", "blocked"))])
        let blocked = DispatchSemaphore(value: 0)
        store.ledger.report(
            ConsumptionReport(
                eventId: "blocked", callerId: "c1", environment: .production,
                status: .notUsedNotNeeded, insightIdsUsed: [], reportedAt: 1)
        ) { _ in blocked.signal() }
        let watcher = try settings.connect()
        let deadline = Date(timeIntervalSinceNow: 20)
        while try watcher.query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").first?.int64(0) == 0 {
            guard Date() < deadline else { return XCTFail("the writer never waited on the lock") }
            Thread.sleep(forTimeInterval: 0.01)
        }
        queue()
        try blocker.execute("COMMIT")
        XCTAssertEqual(blocked.wait(timeout: .now() + 30), .success)
    }

    static func evaluation(_ id: String, insights: [String] = []) -> EvaluationRecord {
        EvaluationRecord(
            eventId: id, callerId: "c1", environment: .production, category: .payment, createdAt: 1_000,
            reportConsumptionBy: 2_000, subject: HashedSubject(account: [1, 2], device: [3], keyId: "k1"),
            insights: insights.map {
                InsightRecord(
                    insightId: $0, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                    newestModelVersion: "2.0", outcome: .value(.high, reasons: ["activeCallDuringSession"]))
            })
    }

    /// Evaluation `i` of a batch whose evaluations differ in every column that can: ids made from
    /// the event id or kept, 0 to 4 insights and 0 to 2 shadow answers, errors, absent hashes,
    /// decisions and bins, and text that array literals must quote.
    static func varied(_ i: Int) -> EvaluationRecord {
        let made = EvaluationIdentifiers.make(insights: i % 5, milliseconds: 1_700_000_000_000 + Int64(i))
        let eventId = i % 3 == 0 ? "ev \(i) \"q\" \\ ,{}" : made.eventId
        let shadows = i % 3
        func insight(_ id: String, _ k: Int) -> InsightRecord {
            InsightRecord(
                insightId: id, type: k % 2 == 0 ? "isLikelyBeingCoached" : "t,{\"\\é\(i)",
                schemaVersion: 1 + k, modelVersion: k == 1 ? nil : "2.\(k)", newestModelVersion: "2.0",
                outcome: (i + k) % 4 == 3
                    ? .error(.insightUnavailable, detail: "")
                    : .value(k % 2 == 0 ? .high : .unknown, reasons: k == 0 ? [] : ["r\(k)", "x\"y"]),
                scoreBin: (i + k) % 3 == 0 ? nil : (i * 7 + k) % 20)
        }
        let served = (0..<(i % 5)).map { k in insight(i % 2 == 0 && i % 3 != 0 ? made.insightIds[k] : "\(eventId)/\(k)", k) }
        let shadow = (0..<shadows).map { k in insight("\(eventId)/s\(k)", k + 4) }
        let bytes: (UInt8) -> [UInt8]? = { seed in i % 4 == Int(seed) ? nil : [seed, 0, 0x22, 0x5C, 0x2C, UInt8(i & 0xFF)] }
        return EvaluationRecord(
            eventId: eventId, callerId: i % 2 == 0 ? "c1" : "caller \"\(i)\", {é}", environment: i % 5 == 0 ? .sandbox : .production,
            category: .payment, createdAt: 1_700_000_000_000 + Int64(i), reportConsumptionBy: 1_700_000_600_000 + Int64(i),
            subject: HashedSubject(account: bytes(0), device: bytes(1), counterparty: bytes(2), keyId: i % 4 == 3 ? nil : "k\(i % 2)"),
            insights: served, trackedValue: i % 3 == 0 ? nil : .medium, raisedByVelocity: i % 2 == 1,
            decision: i % 3 == 1
                ? nil
                : Decision(
                    action: i % 2 == 0 ? .proceed : .block,
                    reasons: i % 4 == 0 ? [] : ["a", "b,c"], policyVersion: "p\"\(i)"),
            shadowInsights: shadow)
    }

    /// Every evaluation with each of its insights, as text, in order (their numbers left out:
    /// each is the insert's own).
    static func rows(_ connection: PostgresConnection) throws -> [String] {
        let result = try connection.query(
            """
            SELECT ROW(e.event_id, e.caller_id, e.environment, e.category, e.created_at, e.report_by, e.hash_key_id,
                       e.account_hash, e.device_hash, e.counterparty_hash, e.tracked_value, e.raised_by_velocity,
                       e.decision_action, e.decision_reasons, e.policy_version, i.slot - e.number * 8, i.insight_id,
                       i.type, i.schema_version, i.model_version, i.value, i.error_code, i.reasons, i.score_bin)::text
            FROM evaluations e LEFT JOIN insights i ON i.slot BETWEEN e.number * 8 AND e.number * 8 + 7
            ORDER BY 1
            """)
        return result.map { $0.text(0) ?? "" }
    }
}
