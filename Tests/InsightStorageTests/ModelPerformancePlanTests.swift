import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import XCTest

/// A model performance report (`ModelPerformanceSource`) reads the period's evaluations of the
/// tenant's callers as ranges of evaluations_by_caller_created, and everything else by primary
/// key: its cost follows the period, not the year of evaluations the store keeps.
final class ModelPerformancePlanTests: XCTestCase {
    var directory: URL!
    var path: String { directory.appendingPathComponent("insightd.db").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("performance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    static let day: Int64 = 86_400_000

    /// 200,000 evaluations over 365 days by 5 callers (c0 to c3 of tenant default, c4 of acme),
    /// one insight each (version 1.0 or 2.0, value by the row), every 3rd reported, every 7th
    /// labelled (every other of those confirmed fraud).
    func filledDatabase() throws -> SQLiteConnection {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        try db.execute("""
            INSERT INTO callers (caller_id, name, environment, roles, rate, burst, created_at, tenant)
                SELECT 'c' || value, 'caller ' || value, 'production', 'evaluate', 10, 20, 1,
                       CASE WHEN value = 4 THEN 'acme' ELSE 'default' END
                FROM (SELECT 0 AS value UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id)
                SELECT 'e' || i, 'c' || (i % 5), 'production', CASE WHEN i % 4 = 0 THEN 'account' ELSE 'payment' END,
                       i * (365 * \(Self.day) / 200000), i * (365 * \(Self.day) / 200000) + 60000, 'k1'
                FROM n;
            INSERT INTO insights (slot, insight_id, type, schema_version, model_version, value)
                SELECT rowid * 8, event_id || '-i0', 'isLikelyBeingCoached', 1, CASE WHEN rowid % 2 = 0 THEN '2.0' ELSE '1.0' END,
                       CASE rowid % 3 WHEN 0 THEN 'high' WHEN 1 THEN 'medium' ELSE 'unknown' END
                FROM evaluations;
            INSERT INTO consumption_reports (event_id, status, insight_ids, reported_at, timeliness)
                SELECT event_id, 'usedIncreasedFriction', '', created_at + 1000, 'onTime' FROM evaluations WHERE rowid % 3 = 0;
            INSERT INTO labels (insight_id, environment, caller_id, outcome, discovered_at, received_at)
                SELECT event_id || '-i0', 'production', 'ops', CASE WHEN rowid % 2 = 0 THEN 'confirmedFraud' ELSE 'confirmedLegitimate' END,
                       '2027-01-01', created_at + 1000
                FROM evaluations WHERE rowid % 7 = 0;
            """)
        return db
    }

    func testTheReportReadsRangesOfTheCallersIndexAndPrimaryKeysOnly() throws {
        let db = try filledDatabase()
        for analysed in [false, true] {
            if analysed { try db.execute("ANALYZE") }
            let plan = try db.prepare("EXPLAIN QUERY PLAN \(SQLiteModelPerformance.countsQuery)").query { $0.text(3) ?? "" }
            let context = "analysed \(analysed): \(plan)"
            XCTAssertTrue(plan.contains("SEARCH e USING INDEX evaluations_by_caller_created (caller_id=? AND created_at>? AND created_at<?)"), context)
            XCTAssertTrue(plan.contains("SEARCH i USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"), context)
            XCTAssertTrue(plan.contains { $0.hasPrefix("SEARCH r USING INDEX sqlite_autoindex_consumption_reports_1 (event_id=?)") }, context)
            XCTAssertTrue(plan.contains { $0.hasPrefix("SEARCH l USING INDEX sqlite_autoindex_labels_1 (insight_id=?)") }, context)
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN e") || $0.hasPrefix("SCAN i") || $0.hasPrefix("SCAN r")
                || $0.hasPrefix("SCAN l") }, context)
        }
    }

    /// The counts of a week equal those counted independently here, row by row, and the week
    /// costs a small fraction of the year.
    func testAWeeksCountsAreTheWeeksRowsOnly() throws {
        let db = try filledDatabase()
        try db.execute("ANALYZE")
        let writer = GroupCommitWriter(connection: try Database.open(path: path, create: false))
        writer.start()
        defer { writer.stop() }
        let source = try SQLiteAdministration(path: path, writer: writer)
        let from = 100 * Self.day, to = 107 * Self.day, matureBefore = 103 * Self.day
        let query = ModelPerformanceQuery(tenant: "default", environment: .production, from: from, to: to, matureBefore: matureBefore)
        let started = Date()
        let week = ModelPerformanceCell.merged(try source.modelPerformanceCounts(query))
        let weekSeconds = Date().timeIntervalSince(started)

        // The same rows, counted one by one from the fill's rules.
        var expected: [ModelPerformanceCell] = []
        let step = 365 * Self.day / 200_000
        for i in Int64(1)...200_000 where i % 5 != 4 && i * step >= from && i * step < to {
            let value: InsightValue = [.high, .medium, .unknown][Int(i % 3)]
            expected.append(ModelPerformanceCell(
                modelVersion: i % 2 == 0 ? "2.0" : "1.0", category: i % 4 == 0 ? .account : .payment, value: value,
                consumption: i % 3 == 0 ? .usedIncreasedFriction : nil,
                label: i % 7 == 0 ? (i % 2 == 0 ? .confirmedFraud : .confirmedLegitimate) : nil,
                count: 1, mature: i * step < matureBefore ? 1 : 0))
        }
        XCTAssertEqual(week, ModelPerformanceCell.merged(expected))
        XCTAssertEqual(week.map(\.count).reduce(0, +), expected.count)
        XCTAssertGreaterThan(expected.count, 3_000)

        let yearStarted = Date()
        _ = try source.modelPerformanceCounts(ModelPerformanceQuery(tenant: "default", environment: .production, from: 0,
                                                                    to: 366 * Self.day, matureBefore: 0))
        let yearSeconds = Date().timeIntervalSince(yearStarted)
        // A week is 1/52 of the year's rows; bounded generously for a loaded machine.
        XCTAssertLessThan(weekSeconds, yearSeconds / 4, "week \(weekSeconds) s, year \(yearSeconds) s")
    }
}
