import Foundation

/// The queue in front of a store's single writer (SQLite's `GroupCommitWriter`, PostgreSQL's
/// `PostgresWriter`): jobs queue up from any thread, at most `capacity` of them (back-pressure),
/// and a thread of the queue's own takes them in batches of at most `maxBatch`, in order, and
/// hands each batch to the writer. `stop` lets every queued job through before the thread ends.
public final class WriterQueue<Job>: @unchecked Sendable {
    // @unchecked: `jobs` and `stopping` are guarded by `condition`; `thread` is set once by
    // `start` before any job can be taken.
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var stopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    private let threadName: String
    /// Most jobs waiting before new ones are refused.
    public let capacity: Int
    /// Most jobs handed over together.
    public let maxBatch: Int

    public init(threadName: String, capacity: Int, maxBatch: Int) {
        self.threadName = threadName
        self.capacity = capacity
        self.maxBatch = max(1, maxBatch)
    }

    /// Starts the thread: it calls `process` with each batch, and `whenStopped` once the queue
    /// is stopped and empty. Neither is kept after the thread ends.
    public func start(process: @escaping @Sendable ([Job]) -> Void, whenStopped: @escaping @Sendable () -> Void = {}) {
        let thread = Thread { [self] in
            while let batch = self.next() { process(batch) }
            whenStopped()
            self.finished.signal()
        }
        thread.name = threadName
        self.thread = thread
        thread.start()
    }

    /// Jobs waiting now.
    public var depth: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count
    }

    /// Queues `job`; nil when it is queued, else why it is not: `.unavailable` once `stop` was
    /// called, `.overloaded` when `capacity` jobs are waiting.
    public func enqueue(_ job: Job) -> StoreFailure? {
        condition.lock()
        defer { condition.unlock() }
        if stopping { return .unavailable("the store is stopping") }
        if jobs.count >= capacity { return .overloaded }
        jobs.append(job)
        condition.signal()
        return nil
    }

    /// Lets every queued job through, then ends the thread; later jobs are refused.
    public func stop() {
        condition.lock()
        let wasRunning = !stopping && thread != nil
        stopping = true
        condition.signal()
        condition.unlock()
        if wasRunning { finished.wait() }
    }

    /// The next batch, waiting for one; nil when stopped and empty.
    private func next() -> [Job]? {
        condition.lock()
        defer { condition.unlock() }
        while jobs.isEmpty && !stopping { condition.wait() }
        if jobs.isEmpty { return nil }
        let batch = Array(jobs.prefix(maxBatch))
        jobs.removeFirst(batch.count)
        return batch
    }
}
