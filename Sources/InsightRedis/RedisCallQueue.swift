import InsightDomain
import RedisClient

/// The request path's Redis calls, made by a thread of the instance's own so that no event loop
/// waits for Redis: calls queue up from any thread (a `WriterQueue`), and the thread sends every
/// queued one (up to `maxBatch`) as one pipeline on one of the link's connections, then hands each
/// its reply. While a pipeline is in flight the next batch gathers, so the busier the instance,
/// the fewer round trips per call, and Redis reads many scripts per read. An evaluation's gate
/// and its velocity record go this way (`RedisLink.enqueue`).
///
/// Each call's `answered` runs on that thread exactly once: with its reply (an error reply
/// included), or nil when Redis did not answer (unavailable, or the pipeline failed: the link
/// counts it and marks Redis unavailable on a transport failure). `stop` answers every queued
/// call before it returns.
final class RedisCallQueue: Sendable {
    struct Call: Sendable {
        let command: RedisCommand
        let answered: @Sendable (RedisReply?) -> Void
    }

    /// Most calls in one pipeline: a batch's scripts run back to back on the server (tens of
    /// microseconds each), and the connection waits at most `RedisLinkSettings.commandTimeout`
    /// for the last reply, so a batch stays well within it.
    static let maxBatch = 128
    /// Calls waiting before `submit` refuses (the caller then makes its call itself).
    static let capacity = 65_536

    /// Sends one pipeline on the link (nil: Redis did not answer).
    private let pipeline: @Sendable ([RedisCommand]) -> [RedisReply]?
    private let queue = WriterQueue<Call>(threadName: "insightd.redis-calls", capacity: capacity, maxBatch: maxBatch)

    /// Starts the thread (the link makes the queue with its first call).
    init(pipeline: @escaping @Sendable ([RedisCommand]) -> [RedisReply]?) {
        self.pipeline = pipeline
        queue.start(process: { [self] batch in send(batch) })
    }

    /// Queues `command`; false when it is not queued (stopped, or `capacity` calls waiting), and
    /// `answered` will not run.
    func submit(_ command: RedisCommand, answered: @escaping @Sendable (RedisReply?) -> Void) -> Bool {
        queue.enqueue(Call(command: command, answered: answered)) == nil
    }

    /// Answers every queued call, then ends the thread; later calls are refused.
    func stop() { queue.stop() }

    private func send(_ batch: [Call]) {
        let replies = pipeline(batch.map(\.command))
        for (index, call) in batch.enumerated() { call.answered(replies?[index]) }
    }
}
