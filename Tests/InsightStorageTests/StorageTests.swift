import Crypto
import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import Synchronization
import XCTest

/// What is particular to the SQLite stores (migrations, query plans, the row layout, the
/// group-commit writer), against a real SQLite file in a temporary directory. What every backend
/// of the store ports must do is `StoreContract`'s, run by StoreContractTests.
final class StorageTests: XCTestCase {
    var directory: URL!
    var path: String { directory.appendingPathComponent("insightd.db").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("storage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    // MARK: Migrations

    func testMigrationsApplyOnceAndRecordChecksums() throws {
        let (db, applied) = try Database.openMigrated(path: path, now: 1)
        XCTAssertEqual(applied, try Migrator.bundled().map(\.name))
        XCTAssertFalse(applied.isEmpty)
        let again = try Migrator(migrations: Migrator.bundled()).migrate(db, now: 2)
        XCTAssertEqual(again, [])
        let history = try Migrator(migrations: Migrator.bundled()).applied(db)
        XCTAssertEqual(history.map(\.checksum), try Migrator.bundled().map(\.checksum))
        XCTAssertEqual(try db.scalarText("PRAGMA journal_mode"), "wal")
    }

    /// Every existing database recorded these SHA-256 values when it applied the migrations: a
    /// changed byte in a file of migrations/sqlite/ (a move, a reformatting) would make each of
    /// them refuse to start.
    func testTheSQLiteMigrationsKeepTheChecksumsExistingDatabasesRecorded() throws {
        let recorded = [
            "0001_initial": "64cc6654af08e960ab094ac4e571dc2807e8c99a94a3db69ed8c10dc37dd64c6",
            "0002_rate_limits": "905707c69f9aa41910a0e1596df9a50ef3d051fe6d7638617671239be782b306",
            "0003_privacy": "fcc2b55c8f066d08367319970a76f771f26ddb06859888da84c59c01bdd4443f",
            "0004_velocity": "0343ea71a97168906c6ef9f9413572b688bae865859abe57d96e17c09ea8a994",
            "0005_drop_unused_index": "0a620fb2274aa8fe29c0875450549e053cfa5bd44510d3beb50fe411086b4d77",
            "0006_drop_created_index": "42eba9599b73c3d42e39b61e78255067aff132cd50adb04acf5c7e2a53d50e21",
            "0007_insights_by_slot": "f2e99e60f2324e3ca40193aab5e9940a80ecbea9fa8c21a1b4500b0aab4f75d7",
            "0008_insight_ids_from_event_ids": "8ca0b8abb9b28db4d63beed79497469ef834bbcdbafdc0a4abe7de0afc9f4c68",
            "0009_tenants": "ea75961bdd2985fa0023285e3efe99de9950bd98e6b4f87b4d89542f1d918af5",
            "0010_evaluation_numbers": "58a97d3b5e781063efcc1d9a08edda214c05054c35db444d444a517b0c0361c5",
            "0011_hash_keys": "37d3a89f4a58ba624fa3c356b675f814ce472a51734b95488af4cc5e06cbdcdd",
            "0012_subject_indexes": "f69d54e1b1c982b30a3d661b4780f3b7721ba5990cd3a5e9b232b989103b3837",
            "0013_decisions": "ccc931bdca1431e2af42611063072f58af46eb17e420087c16189228800ce1c1",
            "0014_training_capture": "946a3174a8f14fa96359fbaa8046a2b266e2474e81e6dba85b6b09bd02a0c6c4",
            "0015_shadow_and_score_bins": "9e0b7413001e194818f69dcdd54b7eaf4d64fa469eb9a858ce843ac15f5c705f",
            "0017_interaction_sources": "90140e5b1dd25af925f95a388036aec7dd322ac4c3e34e712b1ea765de0df8b0"
        ]
        let bundled = try Migrator.bundled()
        XCTAssertGreaterThanOrEqual(bundled.count, recorded.count)
        for (name, checksum) in recorded {
            XCTAssertEqual(bundled.first { $0.name == name }?.checksum, checksum, name)
        }
    }

    func testAnEditedMigrationIsRefused() throws {
        _ = try Database.openMigrated(path: path, now: 1)
        var edited = try Migrator.bundled()
        edited[0] = try Migration(name: edited[0].name, sql: edited[0].sql + "\n-- edited")
        let db = try Database.open(path: path)
        XCTAssertThrowsError(try Migrator(migrations: edited).migrate(db, now: 2)) { error in
            XCTAssertTrue("\(error)".contains("was edited after it was applied"), "\(error)")
        }
    }

    func testAMigrationUnknownToTheBinaryIsRefused() throws {
        let db = try Database.open(path: path)
        let newer = try Migrator.bundled() + [Migration(name: "9999_future", sql: "CREATE TABLE future (x INTEGER)")]
        try Migrator(migrations: newer).migrate(db, now: 1)
        XCTAssertThrowsError(try Migrator(migrations: Migrator.bundled()).migrate(db, now: 2)) { error in
            XCTAssertTrue("\(error)".contains("does not know"), "\(error)")
        }
    }

    func testAFailingMigrationLeavesNoTrace() throws {
        let db = try Database.open(path: path)
        let broken = try [Migration(name: "0001_broken", sql: "CREATE TABLE a (x INTEGER); CREATE TABLE a (y INTEGER);")]
        XCTAssertThrowsError(try Migrator(migrations: broken).migrate(db, now: 1))
        XCTAssertEqual(try Migrator(migrations: broken).applied(db), [])
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM sqlite_master WHERE name = 'a'"), "0")
    }

    // MARK: Callers and keys

    func testCallersKeysAndRevocation() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let registry = CallerRegistry(db)
        let (caller, key) = try registry.create(
            name: "payments", environment: .production,
            roles: [.evaluate, .labels], rate: 50, burst: 100,
            now: 10, callerId: "c1")
        XCTAssertEqual(caller.roles, [.evaluate, .labels])
        XCTAssertEqual(try registry.list().map(\.callerId), ["c1"])
        let directory = try SQLiteCredentialDirectory(path: path)
        let found = try XCTUnwrap(try directory.credential(keyId: key.keyId))
        XCTAssertEqual(found.caller, caller)
        XCTAssertTrue(key.matches(found.key.secretHash))
        XCTAssertNil(found.key.revokedAt)
        XCTAssertEqual(APIKey(token: key.token), key)

        // The secret never reaches the database file.
        let fileBytes =
            try Data(contentsOf: URL(fileURLWithPath: path)) + ((try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data())
        XCTAssertNil(fileBytes.range(of: Data(key.secret.utf8)))

        try registry.revokeKey(keyId: key.keyId, now: 20)
        XCTAssertEqual(try directory.credential(keyId: key.keyId)?.key.revokedAt, 20)
        XCTAssertThrowsError(try registry.revokeKey(keyId: key.keyId, now: 21))
        XCTAssertThrowsError(try registry.revokeKey(keyId: "0000000000000000", now: 21))
        XCTAssertThrowsError(
            try registry.create(
                name: "x", environment: .sandbox, roles: [], rate: 1, burst: 1,
                now: 1, callerId: "c2"))
        XCTAssertThrowsError(
            try registry.create(
                name: " ", environment: .sandbox, roles: [.admin], rate: 1,
                burst: 1, now: 1, callerId: "c2"))
    }

    // MARK: Ledger

    func makeLedger(capacity: Int = 1000) throws -> (SQLiteLedger, GroupCommitWriter) {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let writer = GroupCommitWriter(connection: db, capacity: capacity, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        return (try SQLiteLedger(writer: writer), writer)
    }

    func evaluation(
        _ id: String, caller: String = "c1", environment: Environment = .production,
        insights: [String] = ["i-\(UUID().uuidString)"]
    ) -> EvaluationRecord {
        EvaluationRecord(
            eventId: id, callerId: caller, environment: environment, category: .payment,
            createdAt: 1000, reportConsumptionBy: 2000,
            subject: HashedSubject(account: [1, 2, 3], device: nil, counterparty: [4], keyId: "k"),
            insights: insights.map {
                InsightRecord(
                    insightId: $0, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                    newestModelVersion: "2.0", outcome: .value(.high, reasons: ["activeCallDuringSession"]))
            })
    }

    /// Reports the use of `ids` of evaluation `event` (caller c1, production, on time).
    func report(_ ledger: SQLiteLedger, _ event: String, _ ids: [String]) -> Result<ConsumptionResult, StoreFailure> {
        wait {
            ledger.report(
                ConsumptionReport(
                    eventId: event, callerId: "c1", environment: .production,
                    status: .usedIncreasedFriction, insightIdsUsed: ids, reportedAt: 1500),
                completion: $0)
        }
    }

    func wait<T: Sendable>(_ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void) -> Result<T, StoreFailure> {
        let done = expectation(description: "completion")
        let box = ResultBox<T>()
        body { result in
            box.value = result; done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return box.value!
    }

    func testReportingStatsCountEachCallersWindowFromItsPenaltyReset() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let registry = CallerRegistry(db)
        for id in ["c1", "c2", "c3"] {
            _ = try registry.create(
                name: id, environment: .production, roles: [.evaluate], rate: 10, burst: 10,
                now: 1, callerId: id)
        }
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        let ledger = try SQLiteLedger(writer: writer)
        let administration = try SQLiteAdministration(path: path, writer: writer)
        func record(_ id: String, _ caller: String, created: Int64, due: Int64) throws {
            var e = evaluation(id, caller: caller)
            e.createdAt = created
            e.reportConsumptionBy = due
            _ = try wait { ledger.record(e, answer: [7], completion: $0) }.get()
        }
        func report(_ id: String, _ caller: String, at: Int64) throws {
            _ = try wait {
                ledger.report(
                    ConsumptionReport(
                        eventId: id, callerId: caller, environment: .production,
                        status: .notUsedNotNeeded, insightIdsUsed: [], reportedAt: at),
                    completion: $0)
            }.get()
        }
        // The window starts at 10,000; now is 20,000.
        try record("old", "c1", created: 5_000, due: 6_000)  // before the window: not counted
        try record("on-time", "c1", created: 11_000, due: 15_000)
        try report("on-time", "c1", at: 14_000)
        try record("late", "c1", created: 12_000, due: 13_000)
        try report("late", "c1", at: 16_000)
        try record("overdue", "c1", created: 12_500, due: 19_000)
        try record("pending", "c1", created: 13_000, due: 25_000)
        // c2's penalty was reset at 12,000: what came before it is forgiven.
        try record("forgiven", "c2", created: 11_000, due: 11_500)
        try record("after-reset", "c2", created: 12_500, due: 30_000)
        XCTAssertTrue(
            try wait { administration.resetPenalty(callerId: "c2", tenant: Tenant.defaultName, at: 12_000, completion: $0) }.get())

        let stats = try administration.reportingStats(since: 10_000, now: 20_000)
        XCTAssertEqual(
            stats,
            [
                "c1": ReportingStats(evaluations: 4, onTime: 1, late: 1, overdue: 1, pending: 1),
                "c2": ReportingStats(evaluations: 1, onTime: 0, late: 0, overdue: 0, pending: 1)
            ])  // c3 made no evaluation: no entry

        // Each caller's window is a range of the (caller_id, created_at) index, not a scan of
        // every evaluation kept.
        let plan = try db.prepare("EXPLAIN QUERY PLAN \(SQLiteAdministration.reportingStatsQuery)")
            .query { $0.text(3) ?? "" }
        XCTAssertTrue(
            plan.contains("SEARCH e USING INDEX evaluations_by_caller_created (caller_id=? AND created_at>?)"),
            "\(plan)")
        XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN e") }, "\(plan)")
    }

    func testRetentionAndVelocityReadCallerByCallerWithoutACreatedIndex() throws {
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        let administration = try SQLiteAdministration(path: path, writer: writer)
        // Three callers (none has a callers row: evaluations alone say who has some), times
        // interleaved across them, two in the same millisecond.
        let plan: [(id: String, caller: String, at: Int64, account: UInt8)] = [
            ("e1", "zeta", 1_000, 1), ("e2", "alpha", 2_000, 2), ("e3", "zeta", 3_000, 3),
            ("e4", "mid", 3_000, 4), ("e5", "alpha", 4_000, 5), ("e6", "mid", 5_000, 6)
        ]
        for e in plan {
            var record = evaluation(e.id, caller: e.caller)
            record.createdAt = e.at
            record.subject = HashedSubject(account: [e.account], device: nil, counterparty: nil, keyId: "k")
            _ = try wait { ledger.record(record, answer: [7], completion: $0) }.get()
        }
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let indexes = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").query { $0.text(0) ?? "" }
        XCTAssertFalse(indexes.contains("evaluations_by_created"))

        // Oldest first across callers; the same millisecond in commit order.
        XCTAssertEqual(
            try administration.velocityEvents(since: 2_000).map { $0.account?.first },
            [2, 3, 4, 5, 6])
        XCTAssertEqual(try administration.velocityEvents(since: 0).count, 6)

        // Retention deletes what is older than the cutoff for every caller, with its insights.
        let first = try Retention.purgeBatch(db, cutoff: 3_001)
        XCTAssertEqual(first.evaluations, 4)
        XCTAssertEqual(try Retention.purgeBatch(db, cutoff: 3_001).evaluations, 0)
        XCTAssertEqual(
            try db.prepare("SELECT event_id FROM evaluations ORDER BY event_id").query { $0.text(0) ?? "" },
            ["e5", "e6"])
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM insights"), "2")
    }

    func testInsightsAreFoundByTheirEvaluationsSlots() throws {
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        XCTAssertNoThrow(try wait { ledger.record(evaluation("e1", insights: ["a", "b", "c", "d"]), answer: [7], completion: $0) }.get())
        XCTAssertNoThrow(try wait { ledger.record(evaluation("e2", insights: ["x"]), answer: [7], completion: $0) }.get())
        // Each evaluation sees its own insights only, all four of e1's.
        XCTAssertEqual(report(ledger, "e2", ["a"]), .success(.unknownInsightIds(["a"])))
        XCTAssertEqual(report(ledger, "e1", ["x"]), .success(.unknownInsightIds(["x"])))
        XCTAssertEqual(report(ledger, "e1", ["d", "a"]), .success(.recorded(.onTime)))
        // More insights than an evaluation has served slots for are refused, and nothing is stored.
        let tooMany = (0..<5).map { "many-\($0)" }
        XCTAssertThrowsError(try wait { ledger.record(evaluation("e3", insights: tooMany), answer: [7], completion: $0) }.get())
        let db = try Database.open(path: path)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM evaluations WHERE event_id = 'e3'"), "0")
        XCTAssertEqual(
            try db.scalarText(
                """
                SELECT group_concat(i.slot % 8) FROM insights i JOIN evaluations e ON i.slot / 8 = e.rowid WHERE e.event_id = 'e1'
                """), "0,1,2,3")
    }

    /// Shadow answers take positions 4 to 7 with their score bins (migration 0015), and retention
    /// deletes them with their evaluation: no row of a purged evaluation is left to resurface
    /// under a reused rowid.
    func testShadowAnswersFollowTheServedInsightsAndGoWithTheirEvaluation() throws {
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        var record = evaluation("e1", insights: ["a", "b"])
        record.insights[0].scoreBin = 3
        record.shadowInsights = ["s1", "s2", "s3"].enumerated().map { k, id in
            InsightRecord(
                insightId: id, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "3.\(k)",
                newestModelVersion: "2.0", outcome: .value(.medium, reasons: []), scoreBin: k)
        }
        XCTAssertNoThrow(try wait { ledger.record(record, answer: [7], completion: $0) }.get())
        var later = evaluation("e2", insights: ["x"])
        later.createdAt = 9_000
        XCTAssertNoThrow(try wait { ledger.record(later, answer: [7], completion: $0) }.get())
        let db = try Database.open(path: path)
        XCTAssertEqual(
            try db.scalarText(
                """
                SELECT group_concat((i.slot % 8) || ':' || coalesce(i.score_bin, '-')) FROM insights i
                JOIN evaluations e ON i.slot / 8 = e.rowid WHERE e.event_id = 'e1'
                """), "0:3,1:-,4:0,5:1,6:2")
        XCTAssertEqual(try Retention.purgeBatch(db, cutoff: 5_000).evaluations, 1)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM insights"), "1", "the shadows went with their evaluation")
    }

    /// A database with the bundled migrations up to `version` applied, and all the bundled ones.
    func database(migratedUpTo version: Int) throws -> (SQLiteConnection, [Migration]) {
        let db = try Database.open(path: path)
        let all = try Migrator.bundled()
        _ = try Migrator(migrations: all.filter { $0.version <= version }).migrate(db, now: 1)
        return (db, all)
    }

    func testMigrationToSlotsKeepsEveryInsight() throws {
        // A database as 0005 left it, with insights in the old layout.
        let (db, all) = try database(migratedUpTo: 5)
        try db.execute(
            """
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by)
                VALUES ('e1', 'c1', 'production', 'payment', 1000, 2000), ('e2', 'c1', 'production', 'payment', 1000, 2000);
            INSERT INTO insights (insight_id, event_id, position, type, schema_version, model_version, value, error_code, reasons)
                VALUES ('i2', 'e1', 1, 't', 1, '2.0', NULL, 'insightUnavailable', ''),
                       ('i1', 'e1', 0, 't', 1, '2.0', 'high', NULL, 'activeCallDuringSession'),
                       ('i3', 'e2', 0, 't', 1, '2.0', 'medium', NULL, '');
            """)
        XCTAssertEqual(
            try Migrator(migrations: all.filter { $0.version <= 7 }).migrate(db, now: 2),
            ["0006_drop_created_index", "0007_insights_by_slot"])
        let rows = try db.prepare(
            """
            SELECT i.slot - e.rowid * 8, i.insight_id, i.value, i.error_code, i.reasons
            FROM insights i JOIN evaluations e ON e.event_id = i.event_id ORDER BY i.slot
            """
        ).query { row in (0..<5).map { row.text($0) ?? "-" }.joined(separator: "|") }
        XCTAssertEqual(rows, ["0|i1|high|-|activeCallDuringSession", "1|i2|-|insightUnavailable|", "0|i3|medium|-|"])
        let indexes = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").query { $0.text(0) ?? "" }
        XCTAssertFalse(indexes.contains("insights_by_event"))
        XCTAssertEqual(try db.scalarText("PRAGMA integrity_check"), "ok")
    }

    func testInsightIdsMadeFromTheEventIdAreFoundThroughIt() throws {
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        let made = EvaluationIdentifiers.make(insights: 2, milliseconds: 1000)
        var record = evaluation(made.eventId, insights: made.insightIds)
        XCTAssertNoThrow(try wait { ledger.record(record, answer: [7], completion: $0) }.get())
        let other = EvaluationIdentifiers.make(insights: 1, milliseconds: 1000)
        record = evaluation(other.eventId, environment: .sandbox, insights: other.insightIds)
        XCTAssertNoThrow(try wait { ledger.record(record, answer: [7], completion: $0) }.get())
        let legacy = evaluation("e-legacy", insights: ["legacy-id"])
        XCTAssertNoThrow(try wait { ledger.record(legacy, answer: [7], completion: $0) }.get())

        // Made ids are not stored, so no index entry is written for them; other ids are.
        let db = try Database.open(path: path)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM insights WHERE insight_id IS NULL"), "3")
        XCTAssertEqual(try db.scalarText("SELECT group_concat(insight_id) FROM insights"), "legacy-id")

        // Consumption knows the made ids, and only the evaluation's own.
        let third = try XCTUnwrap(EvaluationIdentifiers.insightId(eventId: made.eventId, position: 2))
        XCTAssertEqual(report(ledger, made.eventId, [third]), .success(.unknownInsightIds([third])))
        XCTAssertEqual(report(ledger, made.eventId, [other.insightIds[0]]), .success(.unknownInsightIds([other.insightIds[0]])))
        XCTAssertEqual(report(ledger, made.eventId, made.insightIds), .success(.recorded(.onTime)))

        // Labels find made ids through their evaluation, in its environment only, and stored ids
        // through the index; a made id past the evaluation's insights is unknown.
        func label(_ ids: [String], key: String) -> Result<LabelSubmissionResult, StoreFailure> {
            let items: [Label?] = ids.map { Label(insightId: $0, outcome: .confirmedFraud, fraudType: .other, discoveredAt: "2027-01-15") }
            return wait {
                ledger.submit(
                    LabelSubmission(
                        callerId: "ops", environment: .production, items: items,
                        idempotencyKeyHash: Array(key.utf8), bodyHash: Array(key.utf8),
                        receivedAt: 5000), completion: $0)
            }
        }
        XCTAssertEqual(
            label(made.insightIds + ["legacy-id", third, other.insightIds[0]], key: "k1"),
            .success(.processed([.accepted, .accepted, .accepted, .unknownInsight, .unknownInsight], replayed: false)))
        XCTAssertEqual(
            try db.scalarText("SELECT group_concat(category || ':' || value) FROM labels ORDER BY insight_id"),
            "payment:high,payment:high,payment:high")

        // Both ways in are index lookups, never a scan of insights or evaluations.
        let plans = try [SQLiteLedger.findMadeInsight, SQLiteLedger.findStoredInsight].flatMap { sql in
            try db.prepare("EXPLAIN QUERY PLAN \(sql)").query { $0.text(3) ?? "" }
        }
        XCTAssertFalse(plans.contains { $0.hasPrefix("SCAN") }, "\(plans)")
        XCTAssertTrue(plans.contains { $0.contains("insights_by_stored_id") }, "\(plans)")
    }

    func testMigrationToMadeIdsKeepsEveryStoredId() throws {
        // A database as 0007 left it: every insight with its own id.
        let (db, all) = try database(migratedUpTo: 7)
        try db.execute(
            """
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by)
                VALUES ('e1', 'c1', 'production', 'payment', 1000, 2000);
            INSERT INTO insights (slot, insight_id, event_id, position, type, schema_version, model_version, value, error_code, reasons)
                VALUES (8, 'i1', 'e1', 0, 't', 1, '2.0', 'high', NULL, 'activeCallDuringSession'),
                       (9, 'i2', 'e1', 1, 't', 1, '2.0', NULL, 'insightUnavailable', '');
            """)
        XCTAssertEqual(try Migrator(migrations: all).migrate(db, now: 2), all.dropFirst(7).map(\.name))
        XCTAssertEqual(
            try db.prepare("SELECT slot, insight_id, value, error_code, reasons FROM insights ORDER BY slot")
                .query { row in (0..<5).map { row.text($0) ?? "-" }.joined(separator: "|") },
            ["8|i1|high|-|activeCallDuringSession", "9|i2|-|insightUnavailable|"])
        XCTAssertThrowsError(try db.execute("INSERT INTO insights (slot, insight_id, type, schema_version) VALUES (10, 'i1', 't', 1)"))
        XCTAssertEqual(try db.scalarText("PRAGMA integrity_check"), "ok")
        // The ids stay known to consumption and labels.
        let writer = GroupCommitWriter(connection: db, capacity: 10, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        let ledger = try SQLiteLedger(writer: writer)
        XCTAssertEqual(
            wait {
                ledger.report(
                    ConsumptionReport(
                        eventId: "e1", callerId: "c1", environment: .production,
                        status: .usedIncreasedFriction, insightIdsUsed: ["i2", "i1"],
                        reportedAt: 1500), completion: $0)
            },
            .success(.recorded(.onTime)))
        let label = Label(insightId: "i2", outcome: .confirmedLegitimate, fraudType: nil, discoveredAt: "2027-01-15")
        XCTAssertEqual(
            wait {
                ledger.submit(
                    LabelSubmission(
                        callerId: "ops", environment: .production, items: [label],
                        idempotencyKeyHash: [1], bodyHash: [1], receivedAt: 5000),
                    completion: $0)
            },
            .success(.processed([.accepted], replayed: false)))
    }

    func testGroupCommitIsDurableAndConcurrent() throws {
        let (ledger, writer) = try makeLedger()
        let count = 500
        let done = expectation(description: "all committed")
        done.expectedFulfillmentCount = count
        let records = (0..<count).map { evaluation("e\($0)") }
        DispatchQueue.concurrentPerform(iterations: count) { i in
            ledger.record(records[i], answer: [7]) { result in
                if case .success = result { done.fulfill() }
            }
        }
        wait(for: [done], timeout: 30)
        writer.stop()
        // A fresh connection sees every acknowledged evaluation.
        let db = try SQLiteConnection(path: path)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM evaluations"), "\(count)")
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM insights"), "\(count)")
        XCTAssertEqual(try db.scalarText("PRAGMA integrity_check"), "ok")
    }

    func testAFailingJobDoesNotSinkItsBatch() throws {
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        let results = ResultsBox()
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 3
        // The same event id twice: the second insert violates the primary key.
        for id in ["dup", "dup", "fine"] {
            ledger.record(evaluation(id), answer: [7]) { result in
                results.append(id, (try? result.get()) != nil)
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(results.values.filter { $0.0 == "dup" }.map(\.1).sorted { !$0 && $1 }, [false, true])
        XCTAssertEqual(results.values.first { $0.0 == "fine" }?.1, true)
    }

    /// Jobs queued before the writer starts form one batch: it first runs without savepoints,
    /// fails on the duplicate, and runs again with one savepoint per job, so only the duplicate
    /// fails and the others are committed, in one commit.
    func testAFailingJobInABatchFailsAloneWhenTheBatchRunsAgain() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let batches = ResultsBox()
        let writer = GroupCommitWriter(connection: db, capacity: 100, receipts: .withEphemeralKey(instance: "test")) { commit in
            batches.append("\(commit.size)", commit.failed == 1 && commit.firstError?.contains("UNIQUE") == true)
        }
        let ledger = try SQLiteLedger(writer: writer)
        let results = ResultsBox()
        let done = expectation(description: "all four")
        done.expectedFulfillmentCount = 4
        for id in ["first", "dup", "dup", "last"] {
            ledger.record(evaluation(id), answer: [7]) { result in
                results.append(id, (try? result.get()) != nil)
                done.fulfill()
            }
        }
        writer.start()
        wait(for: [done], timeout: 10)
        writer.stop()
        XCTAssertEqual(batches.values.map(\.0), ["4"])
        XCTAssertEqual(batches.values.map(\.1), [true], "the commit reports its one failure and why")
        XCTAssertEqual(results.values.map { "\($0.0)=\($0.1)" }, ["first=true", "dup=true", "dup=false", "last=true"])
        let check = try Database.open(path: path)
        XCTAssertEqual(
            try check.scalarText("SELECT group_concat(event_id, ',') FROM (SELECT event_id FROM evaluations ORDER BY event_id)"),
            "dup,first,last")
        XCTAssertEqual(try check.scalarText("SELECT count(*) FROM insights"), "3")
    }

    /// A full disk, as SQLite meets it (SQLITE_FULL, here from a page limit on the file): the
    /// write that does not fit fails with `unavailable`, the commit reports the failure and
    /// SQLite's reason, the writes before it stay stored, and once there is room writes succeed.
    func testAFullDiskFailsTheWriteReportsWhyAndWritesResumeWithRoom() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let pages = try XCTUnwrap(Int(try db.scalarText("PRAGMA page_count") ?? ""))
        try db.execute("PRAGMA max_page_count = \(pages + 4)")  // four pages of room
        let commits = ResultsBox()
        let writer = GroupCommitWriter(connection: db, capacity: 100, receipts: .withEphemeralKey(instance: "test")) { commit in
            if let error = commit.firstError { commits.append(error, commit.failed == 1) }
        }
        let ledger = try SQLiteLedger(writer: writer)
        writer.start()
        defer { writer.stop() }
        /// Records one evaluation and waits for its answer.
        func record(_ id: String) -> Result<Void, StoreFailure> {
            let box = ResultBox<Void>()
            let done = expectation(description: id)
            ledger.record(evaluation(id), answer: [7]) {
                box.value = $0.map { _ in () }; done.fulfill()
            }
            wait(for: [done], timeout: 10)
            return box.value!
        }
        var stored = 0
        var full: Result<Void, StoreFailure>?
        while stored < 1_000 {
            let result = record(String(format: "e%04d", stored))
            if case .failure = result { full = result; break }
            stored += 1
        }
        guard case .failure(.unavailable)? = full else {
            return XCTFail("\(stored) evaluations fitted in four pages, or the failure was not `unavailable`: \(String(describing: full))")
        }
        XCTAssertEqual(commits.values.count, 1)
        XCTAssertTrue(commits.values.first?.0.contains("full") == true, "the reason is SQLite's: \(commits.values)")
        XCTAssertEqual(commits.values.first?.1, true, "one failed write")

        // Room again (the limit lifted on the writer's own thread, as a freed disk would be).
        let lifted = expectation(description: "limit lifted")
        writer.submit({ db in try db.execute("PRAGMA max_page_count = 1073741823") }) { _ in lifted.fulfill() }
        wait(for: [lifted], timeout: 10)
        guard case .success = record("after") else { return XCTFail("a write with room again failed") }
        let check = try Database.open(path: path)
        XCTAssertEqual(try check.scalarText("SELECT count(*) FROM evaluations"), "\(stored + 1)")
        XCTAssertEqual(try check.scalarText("PRAGMA integrity_check"), "ok")
    }

    /// The answers of one batch share one signed head, stored with the batch; a job that fails
    /// (here a duplicate event id, run again in its own savepoint) is no leaf of it; an issuer
    /// resumed from the database continues the chain after the last stored head.
    func testOneBatchIsOneSignedHeadAndAFailedEvaluationIsNoLeafOfIt() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let receipts = ReceiptIssuer.withEphemeralKey(instance: "batch")
        receipts.resume(after: try SQLiteReceiptLog.tips(of: "batch", in: db))
        let first = GroupCommitWriter(connection: db, receipts: receipts)
        first.start()
        let firstLedger = try SQLiteLedger(writer: first)
        try wait { firstLedger.record(evaluation("taken"), answer: [0], completion: $0) }.map { _ in () }.get()
        first.stop()
        let writer = GroupCommitWriter(connection: db, receipts: receipts)  // started below: the jobs wait for one batch
        let ledger = try SQLiteLedger(writer: writer)
        let answers = Mutex<[String: Result<Receipt, StoreFailure>]>([:])
        let done = DispatchGroup()
        for id in ["a", "taken", "b", "c"] {
            done.enter()
            ledger.record(evaluation(id), answer: Array(id.utf8)) { result in
                answers.withLock { $0[id] = result }
                done.leave()
            }
        }
        writer.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        writer.stop()
        let results = answers.withLock { $0 }
        guard case .failure = results["taken"] else { return XCTFail("a duplicate event id was stored") }
        var heads: Set<String> = []
        for id in ["a", "b", "c"] {
            guard case .success(let receipt) = results[id] else { return XCTFail("\(id) failed") }
            heads.insert(receipt.head.jws)
            XCTAssertEqual(receipt.head.head.size, 3, "three leaves: the failed job is none")
            XCTAssertEqual(
                MerkleTree.root(
                    fromAuditPath: receipt.path, leafHash: MerkleTree.leafHash(of: Array(id.utf8)),
                    index: receipt.index, size: 3), receipt.head.head.root, id)
        }
        XCTAssertEqual(heads.count, 1, "one head for the batch")
        XCTAssertEqual(
            Set(["a", "b", "c"].compactMap { id -> Int? in if case .success(let r) = results[id] { r.index } else { nil } }),
            [0, 1, 2])
        let log = try SQLiteReceiptLog(path: path)
        let chain = ReceiptChain(instance: "batch", tenant: Tenant.defaultName, environment: "production")
        let stored = try log.heads(of: chain, from: 0, limit: 10, withLeaves: true)
        XCTAssertEqual(stored.map(\.signed.head.sequence), [0, 1])
        XCTAssertEqual(stored.last?.signed.jws, heads.first)
        XCTAssertEqual(stored.last?.leaves.count, 3 * 32)

        // Opened again, the chain goes on after the last stored head.
        let reopened = ReceiptIssuer.withEphemeralKey(instance: "batch")
        reopened.resume(after: try SQLiteReceiptLog.tips(of: "batch", in: try Database.open(path: path)))
        let next = try XCTUnwrap(
            reopened.issue(leafHashes: [MerkleTree.leafHash(of: [1])], tenant: Tenant.defaultName, environment: "production"))
        XCTAssertEqual(next.head.head.sequence, 2)
        XCTAssertEqual(next.head.head.previous, stored.last?.signed.hash)
    }

    func testAFullQueueAnswersOverloadedAndAStoppedWriterUnavailable() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        // Not started: nothing drains.
        let writer = GroupCommitWriter(connection: db, capacity: 1, receipts: .withEphemeralKey(instance: "test"))
        let ledger = try SQLiteLedger(writer: writer)
        let results = ResultsBox()
        ledger.record(evaluation("a"), answer: [7]) { _ in results.append("a", true) }
        ledger.record(evaluation("b"), answer: [7]) { result in
            if case .failure(.overloaded) = result { results.append("b", true) } else { results.append("b", false) }
        }
        XCTAssertEqual(results.values.first { $0.0 == "b" }?.1, true)
        writer.start()
        writer.stop()
        ledger.record(evaluation("c"), answer: [7]) { result in
            if case .failure(.unavailable) = result { results.append("c", true) } else { results.append("c", false) }
        }
        XCTAssertEqual(results.values.map(\.0).sorted(), ["a", "b", "c"])
        XCTAssertTrue(results.values.allSatisfy(\.1))
    }
}

final class ResultBox<T: Sendable>: @unchecked Sendable {
    // @unchecked: written once before the expectation is fulfilled, read after the wait.
    var value: Result<T, StoreFailure>?
}

final class ResultsBox: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var storage: [(String, Bool)] = []
    func append(_ key: String, _ ok: Bool) { lock.lock(); storage.append((key, ok)); lock.unlock() }
    var values: [(String, Bool)] { lock.lock(); defer { lock.unlock() }; return storage }
}
