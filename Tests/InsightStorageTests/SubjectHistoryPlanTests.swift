import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import XCTest

/// A subject's history (`SubjectHistory`) is a backward range of its kind's hash index
/// (migration 0012) and its evaluations' slots: it never reads the evaluations through, so its
/// cost depends on the subject's evaluations, not on how many the store keeps.
final class SubjectHistoryPlanTests: XCTestCase {
    var directory: URL!
    var path: String { directory.appendingPathComponent("insightd.db").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    /// 200,000 evaluations by 5 callers with random hashes (every other one without a
    /// counterparty), of which every 1,000th carries the subject's account hash 07…07.
    func filledDatabase() throws -> SQLiteConnection {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        try db.execute("""
            INSERT INTO callers (caller_id, name, environment, roles, rate, burst, created_at)
                SELECT 'c' || value, 'caller ' || value, 'production', 'evaluate', 10, 20, 1
                FROM (SELECT 0 AS value UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash)
                SELECT 'e' || i, 'c' || (i % 5), 'production', 'payment', 1000 + i / 3, 2000 + i, 'k1',
                       CASE WHEN i % 1000 = 0 THEN zeroblob(32) ELSE randomblob(32) END, randomblob(32),
                       CASE WHEN i % 2 = 0 THEN randomblob(32) END
                FROM n;
            INSERT INTO insights (slot, type, schema_version, model_version, value)
                SELECT rowid * 8, 'isLikelyBeingCoached', 1, '2.0', 'high' FROM evaluations;
            """)
        return db
    }

    func plan(_ sql: StaticString, in db: SQLiteConnection) throws -> [String] {
        try db.prepare("EXPLAIN QUERY PLAN \(sql)").query { $0.text(3) ?? "" }
    }

    func testEachKindIsARangeOfItsIndexWithoutASort() throws {
        let db = try filledDatabase()
        for analysed in [false, true] {
            if analysed { try db.execute("ANALYZE") }
            for kind in IdentifierKind.allCases {
                let plan = try plan(SQLiteSubjectHistory.evaluationsQuery(kind), in: db)
                XCTAssertTrue(plan.contains("SEARCH e USING INDEX evaluations_by_\(kind.rawValue) (\(kind.rawValue)_hash=? AND created_at<?)"),
                              "analysed \(analysed): \(plan)")
                XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN") || $0.contains("TEMP B-TREE") }, "analysed \(analysed): \(plan)")
            }
        }
        let insights = try db.prepare("EXPLAIN QUERY PLAN SELECT type FROM insights WHERE slot BETWEEN ? AND ? ORDER BY slot")
            .query { $0.text(3) ?? "" }
        XCTAssertEqual(insights, ["SEARCH insights USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"])
    }

    func testAPageReadsOnlyTheSubjectsRows() throws {
        _ = try filledDatabase()
        let writer = GroupCommitWriter(connection: try Database.open(path: path, create: false))
        writer.start()
        defer { writer.stop() }
        let history = try SQLiteAdministration(path: path, writer: writer)
        let subject = [UInt8](repeating: 0, count: 32)
        var cursor: SubjectHistoryCursor?, read: [SubjectHistoryEntry] = []
        let started = Date()
        repeat {
            let page = try history.subjectHistory(SubjectHistoryQuery(kind: .account, hashes: [subject, [1, 2, 3]],
                                                                     tenant: "default", environment: .production,
                                                                     limit: 50, after: cursor))
            read += page.entries
            cursor = page.next
        } while cursor != nil
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(read.map(\.eventId), stride(from: 200_000, through: 1_000, by: -1_000).map { "e\($0)" })
        XCTAssertTrue(read.allSatisfy { $0.insights == [SubjectHistoryInsight(type: "isLikelyBeingCoached", modelVersion: "2.0", outcome: .value(.high))] })
        // 4 pages of 50 among 200,000 evaluations; a scan of them would take far longer.
        XCTAssertLessThan(seconds, 2, "4 pages took \(seconds) s")
    }
}
