import InsightDomain
import SQLiteClient

/// Fills a store with a year of synthetic evaluations for model performance reports
/// (`ModelPerformanceSource`), in SQL, in transactions of 500,000: for the report's benchmark
/// (`insightd-bench performance`) and its query-plan tests. Never used by the daemon.
///
/// The shape: `count` evaluations spread evenly over `[start, end)`, five callers in turn
/// (`caller_bench0` to `3` of tenant `default`, `caller_bench4` of `acme`), 36-character
/// evaluation ids ending in 0 (their insights' ids are made from them, as the daemon makes them),
/// 32-byte hashes of all three kinds, every 4th an `account` operation and the rest `payment`; one
/// insight each (model 2.0 on even rows, else 1.0; `high`, `medium`, `unknown` by the row modulo
/// 3), a consumption report `usedIncreasedFriction` for every third evaluation and a label for
/// every seventh (`confirmedFraud` on even rows, else `confirmedLegitimate`). Row `i` (from 1) is
/// the evaluation with rowid `i` when the store starts empty. The three subject indexes
/// (migration 0012) are dropped first: the fill would otherwise spend most of its time on them,
/// and the report does not read them. `ANALYZE` and a checkpoint run at the end.
public enum SyntheticPerformanceHistory {
    public static func fill(
        _ db: SQLiteConnection, count: Int, start: Int64, end: Int64,
        progress: (Int) -> Void = { _ in }
    ) throws {
        try db.execute(
            """
            DROP INDEX IF EXISTS evaluations_by_account; DROP INDEX IF EXISTS evaluations_by_device;
            DROP INDEX IF EXISTS evaluations_by_counterparty;
            INSERT OR IGNORE INTO callers (caller_id, name, environment, roles, rate, burst, created_at, tenant)
                SELECT 'caller_bench' || value, 'bench ' || value, 'production', 'evaluate', 10, 20, 1,
                       CASE WHEN value = 4 THEN 'acme' ELSE 'default' END
                FROM (SELECT 0 AS value UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)
            """)
        let chunk = 500_000
        var done = 0
        while done < count {
            let last = min(count, done + chunk)
            try db.execute("BEGIN")
            try db.execute(
                """
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
            progress(done)
        }
        try db.execute("ANALYZE")
        _ = try db.scalarText("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}
