import InsightDomain
import RedisClient
import Synchronization

/// Sends velocity records to Redis from a thread of its own, so that no event loop waits for
/// them: records queue up from any thread (a `WriterQueue`), and the thread sends every queued
/// one (up to `maxBatch`) as one pipeline. While a pipeline is in flight the next batch gathers,
/// so the busier the instance, the fewer round trips per record, and Redis reads many scripts
/// per read.
///
/// Each record's `recorded` runs on that thread once Redis answered for it, or once it is known
/// that it could not be recorded (Redis unavailable, or an error reply: `onDropped` counts them);
/// each runs exactly once. `stop` sends what is queued before it returns.
final class VelocityRecordWriter: Sendable {
    struct Pending: Sendable {
        let command: RedisCommand
        let recorded: @Sendable () -> Void
    }

    /// Most records in one pipeline: a batch's scripts run back to back on the server, and the
    /// request-path connection waits at most `RedisLinkSettings.commandTimeout` for the last
    /// reply (tens of microseconds each, so a batch stays well within it).
    static let maxBatch = 128
    /// Records waiting before `submit` refuses (the caller then records on its own thread).
    static let capacity = 65_536

    private let link: RedisLink
    private let onDropped: @Sendable (Int) -> Void
    private let queue = WriterQueue<Pending>(threadName: "insightd.velocity-records", capacity: capacity,
                                             maxBatch: maxBatch)
    /// The thread starts with the first record (an instance that never records has none).
    private let started = Mutex<Bool>(false)

    init(link: RedisLink, onDropped: @escaping @Sendable (Int) -> Void) {
        self.link = link
        self.onDropped = onDropped
    }

    /// Queues `command`; false when it is not queued (stopped, or `capacity` records waiting),
    /// and `recorded` will not run.
    func submit(_ command: RedisCommand, recorded: @escaping @Sendable () -> Void) -> Bool {
        started.withLock { started in
            guard !started else { return }
            started = true
            queue.start(process: { [self] batch in send(batch) })
        }
        return queue.enqueue(Pending(command: command, recorded: recorded)) == nil
    }

    /// Sends what is queued, then ends the thread; later records are refused.
    func stop() { queue.stop() }

    private func send(_ batch: [Pending]) {
        let replies = link.perform { connection throws(RedisError) in try connection.pipeline(batch.map(\.command)) }
        let dropped = replies.map { $0.count { if case .error = $0 { true } else { false } } } ?? batch.count
        if dropped > 0 { onDropped(dropped) }
        for pending in batch { pending.recorded() }
    }
}
