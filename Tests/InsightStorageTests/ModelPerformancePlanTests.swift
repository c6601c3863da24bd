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

    /// 200,000 evaluations over 365 days (`SyntheticPerformanceHistory`, as `make bench` fills
    /// its store): 4 callers of tenant default, 1 of acme, insight ids made from the event ids.
    func filledDatabase() throws -> SQLiteConnection {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        try SyntheticPerformanceHistory.fill(db, count: 200_000, start: 0, end: 365 * Self.day)
        return db
    }

    func testTheReportReadsRangesOfTheCallersIndexAndPrimaryKeysOnly() throws {
        let db = try filledDatabase()
        // The planner's statistics as ANALYZE left them, as they would be on a store of ten
        // million evaluations (where SQLite preferred an automatic index of every insight to
        // each evaluation's slots), and none at all.
        for statistics in ["200,000", "10,000,000", "none"] {
            if statistics == "10,000,000" {
                try db.execute(
                    """
                    UPDATE sqlite_stat1 SET stat = CASE idx
                        WHEN 'evaluations_by_caller_created' THEN '10000000 2000000 1'
                        WHEN 'sqlite_autoindex_evaluations_1' THEN '10000000 1'
                        WHEN 'sqlite_autoindex_consumption_reports_1' THEN '3333333 1'
                        ELSE '1428571 1' END
                    WHERE tbl IN ('evaluations', 'consumption_reports', 'labels');
                    UPDATE sqlite_stat1 SET stat = '10000000' WHERE tbl = 'insights';
                    ANALYZE sqlite_schema;
                    """)
            }
            if statistics == "none" { try db.execute("DROP TABLE sqlite_stat1") }
            let plan = try db.prepare("EXPLAIN QUERY PLAN \(SQLiteModelPerformance.countsQuery)").query { $0.text(3) ?? "" }
            let context = "statistics of \(statistics): \(plan)"
            XCTAssertTrue(
                plan.contains("SEARCH e USING INDEX evaluations_by_caller_created (caller_id=? AND created_at>? AND created_at<?)"), context
            )
            XCTAssertTrue(plan.contains("SEARCH i USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"), context)
            XCTAssertTrue(
                plan.contains { $0.hasPrefix("SEARCH r USING INDEX sqlite_autoindex_consumption_reports_1 (event_id=?)") }, context)
            XCTAssertTrue(plan.contains { $0.hasPrefix("SEARCH l USING INDEX sqlite_autoindex_labels_1 (insight_id=?)") }, context)
            XCTAssertFalse(
                plan.contains {
                    $0.contains("AUTOMATIC") || $0.hasPrefix("SCAN e") || $0.hasPrefix("SCAN i") || $0.hasPrefix("SCAN r")
                        || $0.hasPrefix("SCAN l")
                }, context)
        }
    }

    /// The counts of a week equal those counted independently here, row by row, and the week
    /// costs a small fraction of the year.
    func testAWeeksCountsAreTheWeeksRowsOnly() throws {
        _ = try filledDatabase()
        let writer = GroupCommitWriter(
            connection: try Database.open(path: path, create: false), receipts: .withEphemeralKey(instance: "test"))
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
        let step = 365 * Self.day / 200_000  // as the fill spreads them
        for i in Int64(1)...200_000 where i % 5 != 4 && i * step >= from && i * step < to {
            let value: InsightValue = [.high, .medium, .unknown][Int(i % 3)]
            expected.append(
                ModelPerformanceCell(
                    modelVersion: i % 2 == 0 ? "2.0" : "1.0", category: i % 4 == 0 ? .account : .payment, value: value,
                    consumption: i % 3 == 0 ? .usedIncreasedFriction : nil,
                    label: i % 7 == 0 ? (i % 2 == 0 ? .confirmedFraud : .confirmedLegitimate) : nil,
                    count: 1, mature: i * step < matureBefore ? 1 : 0))
        }
        XCTAssertEqual(week, ModelPerformanceCell.merged(expected))
        XCTAssertEqual(week.map(\.count).reduce(0, +), expected.count)
        XCTAssertGreaterThan(expected.count, 3_000)

        let yearStarted = Date()
        _ = try source.modelPerformanceCounts(
            ModelPerformanceQuery(
                tenant: "default", environment: .production, from: 0,
                to: 366 * Self.day, matureBefore: 0))
        let yearSeconds = Date().timeIntervalSince(yearStarted)
        // A week is 1/52 of the year's rows; bounded generously for a loaded machine.
        XCTAssertLessThan(weekSeconds, yearSeconds / 4, "week \(weekSeconds) s, year \(yearSeconds) s")
    }
}
