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

/// `insightd-bench replay DATABASE [whole|BATCH]`: replays a store's last 7 days into a velocity
/// tracker in this process, the way the daemon does (batches of BATCH, default the daemon's) or
/// as one array of every evaluation (`whole`, the daemon's way before issue 22), and prints the
/// time and the peak resident set.
enum ReplayBench {
    static func run(database: String, mode: String) {
        do {
            let store = try SQLiteStore.open(settings: SQLiteSettings(path: database), now: SystemClock().now()).store.administration
            let tracker = VelocityTracker(clock: SystemClock())
            let since = SystemClock().now() - VelocityWindow.week.milliseconds
            let started = HistoryFill.monotonicSeconds()
            var count = 0, batches = 0
            if mode == "whole" {
                let events = try store.velocityEvents(since: since, batch: Int.max / 2)
                count = events.count
                tracker.rebuild(from: events)
            } else {
                guard let size = Int(mode), size > 0 else { fail("replay: BATCH must be a positive number or whole") }
                let end = try store.velocityHistoryEnd()
                tracker.beginRebuild()
                var cursor: VelocityHistoryCursor? = .from(since)
                while let position = cursor {
                    let batch = try store.velocityEvents(after: position, through: end, limit: size)
                    for event in batch.events { tracker.record(event) }
                    count += batch.events.count
                    batches += 1
                    cursor = batch.next
                }
                tracker.finishRebuild()
            }
            let seconds = HistoryFill.monotonicSeconds() - started
            print(
                "replay \(mode): \(count) evaluations, \(batches) batches, \(String(format: "%.2f", seconds)) s, "
                    + "\(Int(Double(count) / seconds)) evaluations/s, \(tracker.trackedSubjects) subjects, peak RSS \(peakMiB()) MiB")
        } catch {
            fail("replay: \(error)")
        }
    }

    /// VmHWM of this process, in MiB.
    static func peakMiB() -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, 256, file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("VmHWM:") {
                return (Int(text.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
            }
        }
        return 0
    }
}
