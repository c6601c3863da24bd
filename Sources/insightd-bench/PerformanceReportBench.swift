import InsightDomain
import InsightStorage
import SQLiteClient
#if canImport(Glibc)
    import Glibc
#endif

/// `insightd-bench performance DATABASE COUNT`: fills a new SQLite store with COUNT evaluations
/// spread evenly over the 365 days before now, then times the model performance report
/// (`ModelPerformanceSource`) over periods of 1, 7, 30 and 92 days ending 61 days ago.
/// The fill is SQL, not HTTP (`SyntheticPerformanceHistory`).
enum PerformanceReportBench {
    static let day: Int64 = 86_400_000

    static func run(database: String, count: Int) {
        do {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let end = Int64(now.tv_sec) * 1000
            let start = end - 365 * day
            let (db, _) = try Database.openMigrated(path: database, now: end)
            let started = HistoryFill.monotonicSeconds()
            try SyntheticPerformanceHistory.fill(db, count: count, start: start, end: end) { done in
                print("performance: filled \(done) of \(count) evaluations, \(Int(HistoryFill.monotonicSeconds() - started)) s")
                fflush(nil)
            }
            let source = try SQLiteStore.open(settings: SQLiteSettings(path: database), now: end).store.administration
            let periodEnd = end - 61 * day
            for days in [1, 7, 30, 92] {
                let query = ModelPerformanceQuery(
                    tenant: "default", environment: .production,
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
                print(
                    "performance report: \(days) day(s), \(insights) insights of tenant default: "
                        + "best \(milliseconds(sorted[0])) ms, median \(milliseconds(sorted[1])) ms (3 runs; the first reads from disk)")
                fflush(nil)
            }
        } catch {
            fail("performance: \(error)")
        }
    }

    static func milliseconds(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }
}
