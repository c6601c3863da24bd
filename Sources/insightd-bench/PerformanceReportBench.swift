import InsightDomain
import InsightStorage
import SQLiteClient
#if canImport(Glibc)
import Glibc
#endif

/// `insightd-bench performance DATABASE COUNT`: fills a new SQLite store with COUNT evaluations
/// spread evenly over the 365 days before now, then times the model performance report
/// (`ModelPerformanceSource`) over periods of 1, 7, 30 and 92 days ending 61 days ago.
///
/// The fill is SQL, not HTTP, in transactions of 500,000: five callers (four of tenant
/// `default`, one of `acme`) in turn, 36-character evaluation ids ending in 0 (their insights'
/// ids are made from them), 32-byte hashes of all three kinds, one insight each (model 1.0 or
/// 2.0, a value by the row), a consumption report for every third evaluation and a label for
/// every seventh. The three subject indexes (migration 0012) are dropped for the fill, which
/// would otherwise spend most of its time on them; the report does not read them.
enum PerformanceReportBench {
    static let day: Int64 = 86_400_000

    static func run(database: String, count: Int) {
        do {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let end = Int64(now.tv_sec) * 1000
            let start = end - 365 * day
            let (db, _) = try Database.openMigrated(path: database, now: end)
            try fill(db, count: count, start: start, end: end)
            let writer = GroupCommitWriter(connection: db)
            let source = try SQLiteAdministration(path: database, writer: writer)
            let periodEnd = end - 61 * day
            for days in [1, 7, 30, 92] {
                let query = ModelPerformanceQuery(tenant: "default", environment: .production,
                                                  from: periodEnd - Int64(days) * day, to: periodEnd, matureBefore: end - 60 * day)
                var timings: [Double] = []
                var insights = 0
                for _ in 0..<3 {
                    let started = HistoryFill.monotonicSeconds()
                    let cells = try source.modelPerformanceCounts(query)
                    timings.append(HistoryFill.monotonicSeconds() - started)
                    insights = cells.map(\.count).reduce(0, +)
                }
                let sorted = timings.sorted()
                print("performance report: \(days) day(s), \(insights) insights of tenant default: "
                      + "best \(milliseconds(sorted[0])) ms, median \(milliseconds(sorted[1])) ms (3 runs; the first reads from disk)")
                fflush(nil)
            }
        } catch {
            fail("performance: \(error)")
        }
    }

    static func milliseconds(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }

    static func fill(_ db: SQLiteConnection, count: Int, start: Int64, end: Int64) throws {
        try db.execute("""
            DROP INDEX IF EXISTS evaluations_by_account; DROP INDEX IF EXISTS evaluations_by_device;
            DROP INDEX IF EXISTS evaluations_by_counterparty;
            INSERT OR IGNORE INTO callers (caller_id, name, environment, roles, rate, burst, created_at, tenant)
                SELECT 'caller_bench' || value, 'bench ' || value, 'production', 'evaluate', 10, 20, 1,
                       CASE WHEN value = 4 THEN 'acme' ELSE 'default' END
                FROM (SELECT 0 AS value UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)
            """)
        let chunk = 500_000
        let started = HistoryFill.monotonicSeconds()
        var done = 0
        while done < count {
            let last = min(count, done + chunk)
            try db.execute("BEGIN")
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT \(done + 1) UNION ALL SELECT i + 1 FROM n WHERE i < \(last))
                INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                         account_hash, device_hash, counterparty_hash, tracked_value)
                    SELECT printf('0190aaaa-0000-7000-8000-%011d0', i), 'caller_bench' || (i % 5), 'production',
                           CASE WHEN i % 4 = 0 THEN 'account' ELSE 'payment' END,
                           \(start) + i * \(end - start) / \(count), \(start) + i * \(end - start) / \(count) + 60000, 'k1',
                           randomblob(32), randomblob(32), randomblob(32), 'unknown'
                    FROM n;
                INSERT INTO insights (slot, insight_id, type, schema_version, model_version, value, reasons)
                    SELECT rowid * 8, NULL, 'isLikelyBeingCoached', 1, CASE WHEN rowid % 2 = 0 THEN '2.0' ELSE '1.0' END,
                           CASE rowid % 3 WHEN 0 THEN 'high' WHEN 1 THEN 'medium' ELSE 'unknown' END, ''
                    FROM evaluations WHERE rowid > \(done);
                INSERT INTO consumption_reports (event_id, status, insight_ids, reported_at, timeliness)
                    SELECT event_id, 'usedIncreasedFriction', substr(event_id, 1, 35) || '1', created_at + 1000, 'onTime'
                    FROM evaluations WHERE rowid > \(done) AND rowid % 3 = 0;
                INSERT INTO labels (insight_id, environment, caller_id, outcome, discovered_at, received_at)
                    SELECT substr(event_id, 1, 35) || '1', 'production', 'ops',
                           CASE WHEN rowid % 2 = 0 THEN 'confirmedFraud' ELSE 'confirmedLegitimate' END, '2027-01-01',
                           created_at + 1000
                    FROM evaluations WHERE rowid > \(done) AND rowid % 7 = 0;
                """)
            try db.execute("COMMIT")
            done = last
            let seconds = HistoryFill.monotonicSeconds() - started
            print("performance: filled \(done) of \(count) evaluations, \(Int(seconds)) s")
            fflush(nil)
        }
        try db.execute("ANALYZE")
    }
}
