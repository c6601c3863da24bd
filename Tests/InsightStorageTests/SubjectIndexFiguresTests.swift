import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import XCTest

/// Figures of the subject index on a store of 2,000,000 evaluations (or
/// INSIGHTD_SUBJECT_FIGURES_EVALUATIONS; the deep page needs at least 400,000) filled with SQL (random
/// hashes; one account in 500 rows, one counterparty in 100): the indexer's catch-up rate from
/// an empty side file, a history's first and a deep page through the index and from an
/// unindexed tail, and an erasure (with its VACUUM of the side file). Printed for
/// docs/performance.md by `make bench` (`INSIGHTD_BENCH_FIGURES=1 swift test --filter
/// SubjectIndexFiguresTests`; skipped by `make test`: a benchmark, not a test); asserted only on
/// the pages being right.
final class SubjectIndexFiguresTests: XCTestCase {
    static let evaluations = Int(ProcessInfo.processInfo.environment["INSIGHTD_SUBJECT_FIGURES_EVALUATIONS"] ?? "") ?? 2_000_000

    func testHistoryLatencyAndCatchUpOnMillionsOfEvaluations() throws {
        try XCTSkipUnless(
            ProcessInfo.processInfo.environment["INSIGHTD_BENCH_FIGURES"] == "1",
            "a benchmark: make bench runs it (INSIGHTD_BENCH_FIGURES=1)")
        let store = try SubjectStore(name: "index-figures")
        var started = Date()
        let account = [UInt8](repeating: 1, count: 32), counterparty = [UInt8](repeating: 2, count: 32)
        try store.db.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(Self.evaluations))
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash)
                SELECT 'e' || i, 'c' || (i % 3), 'production', 'payment', 1000000 + i, 2000 + i, 'k1',
                       CASE WHEN i % 500 = 0 THEN x'\(SubjectStore.hex(account))' ELSE randomblob(32) END,
                       randomblob(32),
                       CASE WHEN i % 100 = 0 THEN x'\(SubjectStore.hex(counterparty))' ELSE randomblob(32) END
                FROM n;
            INSERT INTO insights (slot, type, schema_version, model_version, value)
                SELECT rowid * 8, 'isLikelyBeingCoached', 1, '2.0', 'high' FROM evaluations;
            """)
        let filled = Date().timeIntervalSince(started)

        // Catch-up from an empty side file, as after a rebuild.
        let index = try SQLiteSubjectIndex(databasePath: store.path)
        started = Date()
        index.start()
        defer { index.stop() }
        try store.waitIndexed(index)
        let catchUp = Date().timeIntervalSince(started)
        let sideBytes = (try FileManager.default.attributesOfItem(atPath: store.sidePath)[.size] as? Int) ?? 0

        func page(_ kind: IdentifierKind, _ hash: [UInt8], after: SubjectHistoryCursor? = nil) throws -> (SubjectHistoryPage, Double) {
            let query = try SubjectHistoryQuery(
                kind: kind, hashes: [hash, [UInt8](repeating: 0xA5, count: 32)], tenant: Tenant.defaultName,
                environment: .production, limit: 50, after: after)
            var best = Double.infinity, result: SubjectHistoryPage?
            for _ in 0..<20 {
                let start = Date()
                result = try index.subjectHistory(query)
                best = min(best, Date().timeIntervalSince(start))
            }
            return (result!, best * 1000)
        }
        let (first, firstMs) = try page(.account, account)
        XCTAssertEqual(first.entries.first?.eventId, "e\(Self.evaluations)")
        XCTAssertEqual(first.entries.count, 50)
        // The 61st page of the counterparty's 20,000 evaluations.
        let deepCursor = SubjectHistoryCursor(
            time: 1_000_000 + Int64(Self.evaluations) - 300_000, sequence: Int64(Self.evaluations) - 300_000)
        let (deep, deepMs) = try page(.counterparty, counterparty, after: deepCursor)
        XCTAssertEqual(deep.entries.first?.eventId, "e\(Self.evaluations - 300_100)")

        // A tail of 30,000 evaluations the indexer has not reached (one second of W2 at full load).
        index.stop()
        try store.db.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT \(Self.evaluations + 1) UNION ALL SELECT i + 1 FROM n WHERE i < \(Self.evaluations + 30_000))
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash)
                SELECT 'e' || i, 'c' || (i % 3), 'production', 'payment', 1000000 + i, 2000 + i, 'k1',
                       CASE WHEN i % 500 = 0 THEN x'\(SubjectStore.hex(account))' ELSE randomblob(32) END,
                       randomblob(32), randomblob(32)
                FROM n;
            """)
        let lagging = try SQLiteSubjectIndex(databasePath: store.path)
        let side = try lagging.open()
        lagging.ready(side)
        let tailQuery = try SubjectHistoryQuery(
            kind: .account, hashes: [account], tenant: Tenant.defaultName,
            environment: .production, limit: 50)
        var tailMs = Double.infinity
        for _ in 0..<20 {
            let start = Date()
            let tailPage = try lagging.subjectHistory(tailQuery)
            tailMs = min(tailMs, Date().timeIntervalSince(start) * 1000)
            XCTAssertEqual(tailPage.entries.first?.eventId, "e\(Self.evaluations + 30_000)")
        }

        // An erasure: rows found through the index, keys removed, the side file rewritten.
        let restarted = try SQLiteSubjectIndex(databasePath: store.path)
        restarted.start()
        defer { restarted.stop() }
        try store.waitIndexed(restarted)
        let (db, _) = try Database.openMigrated(path: store.path, now: 1)
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        started = Date()
        let report = try completed {
            SQLiteSubjectErasure(writer: writer, index: restarted).erase(
                ErasedSubject(tenant: Tenant.defaultName, account: [account]),
                completion: $0)
        }
        let erasure = Date().timeIntervalSince(started)
        XCTAssertEqual(report.evaluations, (Self.evaluations + 30_000) / 500)

        print(
            String(
                format: """
                    subject index figures: %d evaluations filled with SQL in %.1f s; indexer catch-up from empty %.1f s \
                    (%.0f evaluations/s, %.0f keys/s), side file %.0f MB; first page of 50 (account, 2 hashes) %.2f ms; \
                    deep page of 50 (counterparty of 20,000, page 61) %.2f ms; first page with a 30,000-row unindexed tail %.2f ms; \
                    erasure of 4,060 evaluations %.2f s
                    """, Self.evaluations, filled, catchUp, Double(Self.evaluations) / catchUp, Double(Self.evaluations) * 3 / catchUp,
                Double(sideBytes) / 1e6, firstMs, deepMs, tailMs, erasure))
    }
}
