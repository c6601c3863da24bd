import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import XCTest

/// A subject's history (`SubjectHistory`) on SQLite is a backward range of the subject index's
/// keys (the side file), each evaluation read by its rowid, plus the range of rowids past the
/// watermark (the tail), and its evaluations' slots: it never reads the evaluations through, so
/// its cost depends on the subject's evaluations and the indexer's lag, not on how many
/// evaluations the store keeps.
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
        try db.execute(
            """
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

    func plan(_ sql: String, in db: SQLiteConnection) throws -> [String] {
        try db.prepare("EXPLAIN QUERY PLAN \(sql)").query { $0.text(3) ?? "" }
    }

    /// Indexes every evaluation into the side file, without the indexer thread.
    func index(_ path: String) throws -> SQLiteSubjectIndex {
        let index = try SQLiteSubjectIndex(databasePath: path)
        let side = try index.open()
        index.ready(side)
        while try index.indexBatch(side) {}
        return index
    }

    func testEachKindIsARangeOfTheSideKeysAndTheTailARangeOfRowids() throws {
        let db = try filledDatabase()
        _ = try index(path)
        try db.prepare("ATTACH DATABASE ? AS subjects").run(SQLiteSubjectIndex.sidePath(databasePath: path))
        for analysed in [false, true] {
            if analysed { try db.execute("ANALYZE") }
            for kind in IdentifierKind.allCases {
                let indexed = try plan(SQLiteSubjectHistory.indexedQuery(kind), in: db)
                XCTAssertEqual(
                    Array(indexed.prefix(2)),
                    [
                        "SEARCH s USING PRIMARY KEY (kind=? AND prefix=? AND created_at<?)",
                        "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"
                    ], "analysed \(analysed): \(indexed)")
                XCTAssertFalse(indexed.contains { $0.hasPrefix("SCAN") || $0.contains("TEMP B-TREE") }, "analysed \(analysed): \(indexed)")
                let tail = try plan(SQLiteSubjectHistory.tailQuery(kind), in: db)
                XCTAssertEqual(tail.first, "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)", "analysed \(analysed): \(tail)")
                XCTAssertFalse(tail.contains { $0.hasPrefix("SCAN") }, "analysed \(analysed): \(tail)")
                for tailOnly in [false, true] {
                    let erasure = try plan(SQLiteSubjectErasure.unlink(kind, tail: tailOnly), in: db)
                    XCTAssertEqual(
                        erasure.first, "SEARCH evaluations USING INTEGER PRIMARY KEY (rowid\(tailOnly ? ">" : "=")?)",
                        "analysed \(analysed): \(erasure)")
                }
            }
        }
        let insights = try db.prepare("EXPLAIN QUERY PLAN SELECT type FROM insights WHERE slot BETWEEN ? AND ? ORDER BY slot")
            .query { $0.text(3) ?? "" }
        XCTAssertEqual(insights, ["SEARCH insights USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"])
    }

    func testAPageReadsOnlyTheSubjectsRows() throws {
        _ = try filledDatabase()
        let history = try index(path)
        let subject = [UInt8](repeating: 0, count: 32)
        var cursor: SubjectHistoryCursor?, read: [SubjectHistoryEntry] = []
        let started = Date()
        repeat {
            let page = try history.subjectHistory(
                SubjectHistoryQuery(
                    kind: .account, hashes: [subject, [1, 2, 3]],
                    tenant: "default", environment: .production,
                    limit: 50, after: cursor))
            read += page.entries
            cursor = page.next
        } while cursor != nil
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(read.map(\.eventId), stride(from: 200_000, through: 1_000, by: -1_000).map { "e\($0)" })
        XCTAssertTrue(
            read.allSatisfy {
                $0.insights == [SubjectHistoryInsight(type: "isLikelyBeingCoached", modelVersion: "2.0", outcome: .value(.high))]
            })
        // 4 pages of 50 among 200,000 evaluations; a scan of them would take far longer.
        XCTAssertLessThan(seconds, 2, "4 pages took \(seconds) s")
    }
}
