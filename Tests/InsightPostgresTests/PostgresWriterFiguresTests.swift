import Foundation
import InsightDomain
import InsightPostgres
import PostgresTesting
import Synchronization
import XCTest

/// Figures of the pipelined writer against the temporary server (fsync on, one machine): the
/// evaluations it commits per second when many wait, the duration of its commits, and the
/// latency of one evaluation written alone. Printed for docs/performance.md by `make bench`
/// (`INSIGHTD_BENCH_FIGURES=1 swift test --filter PostgresWriterFiguresTests`; skipped by
/// `make test`: a benchmark, not a test); asserted only on every write being committed.
final class PostgresWriterFiguresTests: XCTestCase {
    func testThroughputAndCommitLatencyOfThePipelinedWriter() throws {
        try XCTSkipUnless(
            ProcessInfo.processInfo.environment["INSIGHTD_BENCH_FIGURES"] == "1",
            "a benchmark: make bench runs it (INSIGHTD_BENCH_FIGURES=1)")
        let server = try TemporaryPostgres.shared()
        let settings = PostgresSettings(url: server.url(database: try server.createDatabase()))
        let commits = Mutex<[PostgresWriter.Commit]>([])
        let (store, _) = try PostgresStore.open(
            settings: settings, now: 1, receipts: .withEphemeralKey(),
            observer: { commit in
                commits.withLock { $0.append(commit) }
            })
        store.start()
        defer { store.stop() }

        // Many writes waiting: producers keep up to 2,000 in flight.
        let total = 20_000
        let window = DispatchSemaphore(value: 2_000)
        let done = DispatchGroup()
        let failed = Atomic<Int>(0)
        let started = DispatchTime.now().uptimeNanoseconds
        DispatchQueue.concurrentPerform(iterations: 8) { producer in
            for i in stride(from: producer, to: total, by: 8) {
                window.wait()
                done.enter()
                store.ledger.record(Self.evaluation(i), answer: [7]) { result in
                    if case .failure = result { failed.add(1, ordering: .relaxed) }
                    window.signal()
                    done.leave()
                }
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 300), .success)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        XCTAssertEqual(failed.load(ordering: .relaxed), 0)
        let loaded = commits.withLock { $0 }
        let durations = loaded.map(\.seconds).sorted()
        let meanBatch = Double(loaded.map(\.size).reduce(0, +)) / Double(max(1, loaded.count))

        // One write at a time: the latency a lone request sees.
        var alone: [Double] = []
        for i in 0..<300 {
            let before = DispatchTime.now().uptimeNanoseconds
            let finished = DispatchSemaphore(value: 0)
            store.ledger.record(Self.evaluation(total + i), answer: [7]) { result in
                if case .failure = result { failed.add(1, ordering: .relaxed) }
                finished.signal()
            }
            finished.wait()
            alone.append(Double(DispatchTime.now().uptimeNanoseconds - before) / 1e9)
        }
        XCTAssertEqual(failed.load(ordering: .relaxed), 0)
        alone.sort()
        print(
            String(
                format: """
                    PostgreSQL writer figures: %d evaluations in %.2f s = %.0f evaluations/s; %d commits, mean batch %.1f, \
                    commit p50 %.2f ms p99 %.2f ms; one at a time: p50 %.2f ms p99 %.2f ms
                    """, total, seconds, Double(total) / seconds, loaded.count, meanBatch,
                Self.percentile(durations, 0.50) * 1000, Self.percentile(durations, 0.99) * 1000,
                Self.percentile(alone, 0.50) * 1000, Self.percentile(alone, 0.99) * 1000))
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// An evaluation as the API writes one: made ids, three hashes, two insights.
    static func evaluation(_ i: Int) -> EvaluationRecord {
        let ids = EvaluationIdentifiers.make(insights: 2, milliseconds: 1_700_000_000_000 + Int64(i))
        return EvaluationRecord(
            eventId: ids.eventId, callerId: "caller-\(i % 4)", environment: .production, category: .payment,
            createdAt: 1_700_000_000_000 + Int64(i), reportConsumptionBy: 1_700_000_600_000 + Int64(i),
            subject: HashedSubject(
                account: Array(repeating: UInt8(i & 0xFF), count: 32), device: Array(repeating: 7, count: 32),
                counterparty: Array(repeating: 9, count: 32), keyId: "k1"),
            insights: ids.insightIds.map {
                InsightRecord(
                    insightId: $0, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                    newestModelVersion: "2.0", outcome: .value(.high, reasons: ["activeCallDuringSession"]))
            },
            trackedValue: .high)
    }
}
