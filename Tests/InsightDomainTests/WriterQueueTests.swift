import Foundation
import InsightDomain
import XCTest

/// A value behind a lock, for what the queue's thread and the test both touch.
private final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) }
}

final class WriterQueueTests: XCTestCase {
    /// Jobs come out in order, in batches no larger than `maxBatch`; `stop` lets every queued job
    /// through before the thread ends, runs `whenStopped` once, and later jobs are refused.
    func testBatchesInOrderAndStopDrainsTheQueue() {
        let queue = WriterQueue<Int>(threadName: "test-writer", capacity: 1_000, maxBatch: 7)
        let seen = Guarded<[[Int]]>([])
        let stopped = Guarded(0)
        // Queued before the thread starts: the first batches are full.
        for job in 0..<100 { XCTAssertNil(queue.enqueue(job)) }
        queue.start(
            process: { batch in seen.withLock { $0.append(batch) } },
            whenStopped: { stopped.withLock { $0 += 1 } })
        for job in 100..<200 { XCTAssertNil(queue.enqueue(job)) }
        queue.stop()
        let batches = seen.withLock { $0 }
        XCTAssertEqual(batches.flatMap { $0 }, Array(0..<200))
        XCTAssertTrue(batches.allSatisfy { (1...7).contains($0.count) })
        XCTAssertEqual(batches.first?.count, 7)
        XCTAssertEqual(stopped.withLock { $0 }, 1)
        XCTAssertEqual(queue.enqueue(200), .unavailable("the store is stopping"))
        XCTAssertEqual(queue.depth, 0)
    }

    /// Back-pressure: a full queue refuses at once, and takes jobs again once the thread drained it.
    func testAFullQueueRefusesUntilDrained() {
        let queue = WriterQueue<Int>(threadName: "test-writer", capacity: 3, maxBatch: 10)
        for job in 0..<3 { XCTAssertNil(queue.enqueue(job)) }
        XCTAssertEqual(queue.enqueue(3), .overloaded)
        XCTAssertEqual(queue.depth, 3)
        let drained = DispatchSemaphore(value: 0)
        queue.start(process: { _ in drained.signal() })
        XCTAssertEqual(drained.wait(timeout: .now() + 10), .success)
        XCTAssertNil(queue.enqueue(4))
        queue.stop()
    }
}
