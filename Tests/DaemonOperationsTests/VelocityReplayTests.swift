import Foundation
@testable import InsightApp
import InsightDomain
import InsightStorage
import Synchronization
import XCTest

/// The replay of velocity's history from a real SQLite store, batch by batch through the
/// `VelocityHistory` port (issue 22): bounded batches, and the same counts as one read of it all.
final class VelocityReplayTests: XCTestCase {
    /// The real port, noting the size of every batch it hands out.
    final class BatchSizes: VelocityHistory {
        let store: any VelocityHistory
        let sizes = Mutex<[Int]>([])
        init(_ store: any VelocityHistory) { self.store = store }

        func velocityHistoryEnd() throws -> VelocityHistoryEnd { try store.velocityHistoryEnd() }

        func velocityEvents(
            after cursor: VelocityHistoryCursor, through end: VelocityHistoryEnd,
            limit: Int
        ) throws -> VelocityHistoryBatch {
            let batch = try store.velocityEvents(after: cursor, through: end, limit: limit)
            sizes.withLock { $0.append(batch.events.count) }
            return batch
        }
    }

    func testTheReplayReadsBoundedBatchesAndGivesTheCountsOfTheWholeHistory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightd-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("insightd.db").path
        let now = SystemClock().now()
        let (sqlite, _) = try SQLiteStore.open(settings: SQLiteSettings(path: path), now: now)
        var history = SyntheticHistory(
            count: 20_000, end: now - 1_000, span: VelocityWindow.week.milliseconds - 3_600_000,
            callerId: "c1")
        history.evaluationsPerAccount = 4
        history.counterparties = 500
        try history.insert(intoDatabaseAt: path)
        let store = BatchSizes(sqlite.administration)

        let replayed = VelocityTracker(clock: SystemClock())
        let logger = Logger(minimumLevel: .error, sink: FileHandle(forWritingAtPath: "/dev/null")!)
        let rebuild = try VelocityRebuild(
            history: store, velocity: replayed, clock: SystemClock(), logger: logger,
            batchSize: 500)
        XCTAssertTrue(replayed.isRebuilding)
        rebuild.start()
        let deadline = Date().addingTimeInterval(120)
        while replayed.isRebuilding && Date() < deadline { usleep(5_000) }
        XCTAssertFalse(replayed.isRebuilding)
        rebuild.stop()

        let sizes = store.sizes.withLock { $0 }
        XCTAssertEqual(sizes.reduce(0, +), 20_000)
        XCTAssertEqual(rebuild.replayedEvaluations, 20_000)
        XCTAssertLessThanOrEqual(sizes.max() ?? 0, 500, "no batch beyond the limit")
        XCTAssertGreaterThanOrEqual(sizes.count, 40)

        // The same as recording the whole history read at once.
        let events = try store.velocityEvents(since: 0, batch: 1_000_000)
        XCTAssertEqual(events.count, 20_000)
        let whole = VelocityTracker(clock: SystemClock())
        whole.rebuild(from: events)
        XCTAssertEqual(replayed.trackedSubjects, whole.trackedSubjects)
        for event in events.prefix(2_000) {
            let query = VelocityQuery(
                environment: event.environment, accounts: event.account.map { [$0] } ?? [],
                devices: event.device.map { [$0] } ?? [],
                counterparties: event.counterparty.map { [$0] } ?? [], isPayment: event.isPayment)
            var one = replayed.signals(for: query), two = whole.signals(for: query)
            one.now = 0
            two.now = 0
            XCTAssertEqual(one, two)
        }
    }
}
