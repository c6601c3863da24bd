import Foundation
import Telemetry
import XCTest

/// Many threads updating shared and distinct series at once must lose nothing.
final class ConcurrencyTests: XCTestCase {
    /// Runs `body(thread)` on `count` real threads at once and waits for them all.
    private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                start.wait()
                body(index)
                group.leave()
            }
            thread.start()
        }
        for _ in 0..<count { start.signal() }
        group.wait()
    }

    func testConcurrentUpdatesAreExact() {
        let registry = MetricsRegistry()
        let threads = 8
        let iterations = 20_000
        onThreads(threads) { thread in
            // Families are looked up (registered idempotently) from every thread, too.
            let shared = registry.counter("t_shared_total", help: "", labels: ["route"])
            let cached = shared.labels("/cached")
            let own = registry.counter("t_own_total", help: "", labels: ["thread"])
            let fractions = registry.counter("t_fractions_total", help: "")
            let gauge = registry.gauge("t_gauge", help: "")
            let histogram = registry.histogram("t_seconds", help: "", labels: ["route"], buckets: [1, 2, 3])
            for iteration in 0..<iterations {
                shared.increment("/looked-up")
                cached.increment()
                own.increment(String(thread))
                fractions.increment(by: 0.5)
                gauge.labels().increment()
                gauge.labels().decrement(by: 0.5)
                histogram.observe("/r", value: Double(iteration % 4) + 0.5)
                if iteration % 1000 == 0 { _ = registry.render() }  // scrapes during updates
            }
        }
        let total = Double(threads * iterations)
        let shared = registry.counter("t_shared_total", help: "", labels: ["route"])
        XCTAssertEqual(shared.labels("/looked-up").value, total)
        XCTAssertEqual(shared.labels("/cached").value, total)
        let own = registry.counter("t_own_total", help: "", labels: ["thread"])
        for thread in 0..<threads {
            XCTAssertEqual(own.labels(String(thread)).value, Double(iterations))
        }
        XCTAssertEqual(registry.counter("t_fractions_total", help: "").labels().value, total / 2)
        XCTAssertEqual(registry.gauge("t_gauge", help: "").labels().value, total / 2)
        let histogram = registry.histogram("t_seconds", help: "", labels: ["route"], buckets: [1, 2, 3]).labels("/r")
        let snapshot = histogram.snapshot()
        let quarter = UInt64(threads * iterations / 4)
        XCTAssertEqual(snapshot.cumulativeCounts, [quarter, 2 * quarter, 3 * quarter, 4 * quarter])
        XCTAssertEqual(snapshot.sum, Double(quarter) * (0.5 + 1.5 + 2.5 + 3.5))
        XCTAssertNoThrow(try ExpositionParser.parse(registry.render()))
    }

    func testConcurrentSeriesCreationRespectsTheCap() {
        let registry = MetricsRegistry()
        let family = registry.counter(
            "t_created_total", help: "", labels: ["value"],
            limits: SeriesLimits(maxSeries: 100))
        onThreads(8) { thread in
            for value in 0..<1000 {
                family.increment(String((value * 7 + thread * 13) % 300))
            }
        }
        let parsed = try? ExpositionParser.parse(registry.render())
        let samples = parsed?.families["t_created_total"]?.samples ?? []
        XCTAssertEqual(samples.count, 101)  // 100 series and "other"
        XCTAssertEqual(samples.reduce(0) { $0 + $1.value }, 8000)
        XCTAssertEqual(samples.filter { $0.labels["value"] == "other" }.count, 1)
    }
}
