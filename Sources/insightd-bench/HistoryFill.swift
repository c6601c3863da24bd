import InsightDomain
import InsightStorage
#if canImport(Glibc)
import Glibc
#endif

/// `insightd-bench history`: fills a store with synthetic evaluations spread over the last 7 days
/// (up to a minute ago) for the restart benchmark, printing progress and the rate.
enum HistoryFill {
    static func run(database: String, callerId: String, count: Int) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let end = Milliseconds(now.tv_sec) * 1000 - 60_000
        // Just inside the window: the oldest rows are still in it when the daemon starts minutes later.
        let span = VelocityWindow.week.milliseconds - 3_600_000
        let history = SyntheticHistory(count: count, end: end, span: span, callerId: callerId)
        let started = monotonicSeconds()
        do {
            try history.insert(intoDatabaseAt: database) { done in
                let seconds = monotonicSeconds() - started
                print("history: \(done) of \(count) evaluations, \(Int(seconds)) s, \(Int(Double(done) / max(seconds, 0.001))) rows/s")
                fflush(nil)
            }
        } catch {
            fail("history: \(error)")
        }
    }

    static func monotonicSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
