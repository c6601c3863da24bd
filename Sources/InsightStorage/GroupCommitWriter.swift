import Foundation
import InsightDomain
import SQLiteClient

/// The single writer of the database. Jobs queue up from any thread; the writer thread runs
/// every queued job (up to `maxBatch`) in one transaction, commits once, and only then
/// completes the jobs; when a job fails, the batch is run again with each job in its own
/// savepoint, so one failing job undoes only its own writes. One fsync thus covers a whole
/// batch, and no completion ever reports data that a crash could still lose.
public final class GroupCommitWriter: @unchecked Sendable {
    // @unchecked: the connection is touched only by the queue's thread.
    private struct Job {
        let work: (SQLiteConnection) throws -> Void
        /// Runs after the batch's commit, outside any transaction (a WAL checkpoint); its
        /// failure fails the job.
        var afterCommit: ((SQLiteConnection) throws -> Void)? = nil
        let finish: (Error?) -> Void
    }

    private let connection: SQLiteConnection
    private let queue: WriterQueue<Job>
    /// Most jobs waiting before new ones are refused (back-pressure).
    public var capacity: Int { queue.capacity }
    /// Most jobs committed together.
    public var maxBatch: Int { queue.maxBatch }
    /// What one commit did, for metrics and logs.
    public typealias Commit = StoreCommit

    /// Called on the writer thread after each commit.
    private let observer: (@Sendable (Commit) -> Void)?

    public init(connection: SQLiteConnection, capacity: Int = 10_000, maxBatch: Int = 256,
                observer: (@Sendable (Commit) -> Void)? = nil) {
        self.connection = connection
        queue = WriterQueue(threadName: "insightd-writer", capacity: capacity, maxBatch: maxBatch)
        self.observer = observer
    }

    /// Starts the writer thread.
    public func start() {
        queue.start { [self] batch in commit(batch) }
    }

    /// Jobs waiting now.
    public var depth: Int { queue.depth }

    /// Queues `work`; `completion` runs on the writer thread after the commit (or failure).
    /// Answers `.overloaded` at once when the queue is full, `.unavailable` after `stop()`.
    public func submit<T>(_ work: @escaping @Sendable (SQLiteConnection) throws -> T,
                          completion: @escaping @Sendable (Result<T, StoreFailure>) -> Void) {
        nonisolated(unsafe) var result: T?  // written and read only on the writer thread
        enqueue(Job(
            work: { db in result = try work(db) },
            finish: { error in
                if let error {
                    completion(.failure(Self.failure(error)))
                } else {
                    completion(.success(result!))
                }
            }), completion: { completion(.failure($0)) })
    }

    /// `submit` with `afterCommit` run on the writer's connection once the batch is committed,
    /// outside any transaction, before `completion` (which gets its failure if it throws).
    public func submit<T>(_ work: @escaping @Sendable (SQLiteConnection) throws -> T,
                          afterCommit: @escaping @Sendable (SQLiteConnection) throws -> Void,
                          completion: @escaping @Sendable (Result<T, StoreFailure>) -> Void) {
        nonisolated(unsafe) var result: T?  // written and read only on the writer thread
        enqueue(Job(
            work: { db in result = try work(db) },
            afterCommit: afterCommit,
            finish: { error in
                if let error {
                    completion(.failure(Self.failure(error)))
                } else {
                    completion(.success(result!))
                }
            }), completion: { completion(.failure($0)) })
    }

    /// `submit` for work that returns nothing (an evaluation's insert, on every request): the
    /// work is queued as it is, without a box for its result and a closure around it.
    public func submit(_ work: @escaping @Sendable (SQLiteConnection) throws -> Void,
                       completion: @escaping @Sendable (Result<Void, StoreFailure>) -> Void) {
        enqueue(Job(
            work: work,
            finish: { error in completion(error.map { .failure(Self.failure($0)) } ?? .success(())) }),
            completion: { completion(.failure($0)) })
    }

    /// What a caller is told of a job that failed.
    private static func failure(_ error: any Error) -> StoreFailure { .unavailable("\(error)") }

    /// Queues `job`, or answers `refuse` at once when the writer is stopping or full.
    private func enqueue(_ job: Job, completion refuse: (StoreFailure) -> Void) {
        if let refusal = queue.enqueue(job) { refuse(refusal) }
    }

    /// Finishes every queued job, then stops the thread. Later submissions fail.
    public func stop() { queue.stop() }

    private func commit(_ batch: [Job]) {
        let started = DispatchTime.now().uptimeNanoseconds
        var errors = commitTogether(batch)
        for (i, job) in batch.enumerated() where errors[i] == nil {
            guard let afterCommit = job.afterCommit else { continue }
            do { try afterCommit(connection) } catch { errors[i] = error }
        }
        if let observer {
            let failures = errors.compactMap { $0 }
            observer(Commit(size: batch.count, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9,
                            failed: failures.count, firstError: failures.first.map { "\($0)" }))
        }
        for (job, error) in zip(batch, errors) { job.finish(error) }
    }

    /// A job's failure, told apart from a failure of BEGIN or COMMIT.
    private struct JobFailure: Error {
        let error: any Error
    }

    /// Runs the batch in one transaction with no savepoints: the common case, in which no job
    /// fails. (A savepoint per job made SQLite copy every page a job touched into its
    /// sub-journal first, and the jobs of a batch touch the same index pages: a measurable share
    /// of the writer's time.) If a job fails, the transaction is rolled back and the batch runs
    /// again with a savepoint per job, so that only the failing jobs fail.
    private func commitTogether(_ batch: [Job]) -> [Error?] {
        do {
            try connection.transaction {
                for job in batch {
                    do { try job.work(connection) } catch { throw JobFailure(error: error) }
                }
            }
            return [Error?](repeating: nil, count: batch.count)
        } catch let failure as JobFailure {
            if batch.count == 1 { return [failure.error] }
            return commitIsolated(batch)
        } catch {
            // BEGIN or COMMIT failed: nothing of the batch is durable.
            return [Error?](repeating: error, count: batch.count)
        }
    }

    /// Runs the batch in one transaction, each job in its own savepoint.
    private func commitIsolated(_ batch: [Job]) -> [Error?] {
        var errors = [Error?](repeating: nil, count: batch.count)
        do {
            try connection.transaction {
                for (i, job) in batch.enumerated() {
                    do {
                        try connection.savepoint { try job.work(connection) }
                    } catch {
                        errors[i] = error
                    }
                }
            }
        } catch {
            // The commit itself failed: nothing of the batch is durable.
            for i in errors.indices { errors[i] = errors[i] ?? error }
        }
        return errors
    }
}
