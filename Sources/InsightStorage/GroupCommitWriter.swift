import Foundation
import InsightDomain
import SQLiteClient

/// The single writer of the database. Jobs queue up from any thread; the writer thread runs
/// every queued job (up to `maxBatch`) in one transaction, commits once, and only then
/// completes the jobs; when a job fails, the batch is run again with each job in its own
/// savepoint, so one failing job undoes only its own writes. One fsync thus covers a whole
/// batch, and no completion ever reports data that a crash could still lose.
///
/// The answers of a batch's evaluations of one tenant and environment are the leaves of one
/// Merkle tree: before the commit, the writer has its `ReceiptIssuer` sign each tree's head
/// (one for a batch of one tenant's answers) and stores the heads in the batch's transaction, so
/// that each evaluation completes with its receipt and no answer waits for a signature of its
/// own. Where each head will stand (`HeadPlace`) is known before the jobs run, and told to each
/// answer's job: a retry entry stored with an answer names its head, in the same transaction.
public final class GroupCommitWriter: @unchecked Sendable {
    // @unchecked: the connection is touched only by the queue's thread.
    private struct Job {
        /// What the job writes; an answer's job (`leaf`) is told where its batch's head will
        /// stand, which the answer's retry entry names (nil for any other job).
        let work: (SQLiteConnection, HeadPlace?) throws -> Void
        /// Runs after the batch's commit, outside any transaction (a WAL checkpoint); its
        /// failure fails the job.
        var afterCommit: ((SQLiteConnection) throws -> Void)? = nil
        /// The leaf of the answer the job stores (an evaluation's); such a job completes with its
        /// receipt.
        var leaf: ReceiptLeaf? = nil
        let finish: (Error?, Receipt?) -> Void
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
    /// Signs the head of each batch's answers; nil for a writer that stores no evaluation (a
    /// tool's), which refuses an answer's job.
    private let receipts: ReceiptIssuer?

    /// A writer on `connection`; `receipts` must have resumed its instance's chain from the
    /// database (`SQLiteReceiptLog.tip`).
    public init(
        connection: SQLiteConnection, capacity: Int = 10_000, maxBatch: Int = 256,
        receipts: ReceiptIssuer? = nil, observer: (@Sendable (Commit) -> Void)? = nil
    ) {
        self.connection = connection
        queue = WriterQueue(threadName: "insightd-writer", capacity: capacity, maxBatch: maxBatch)
        self.observer = observer
        self.receipts = receipts
    }

    /// Starts the writer thread.
    public func start() {
        queue.start { [self] batch in commit(batch) }
    }

    /// Jobs waiting now.
    public var depth: Int { queue.depth }

    /// The file the writer writes (a reader opens its own connection to it).
    public var databasePath: String { connection.path }

    /// Queues `work`; `completion` runs on the writer thread after the commit (or failure).
    /// Answers `.overloaded` at once when the queue is full, `.unavailable` after `stop()`.
    public func submit<T>(
        _ work: @escaping @Sendable (SQLiteConnection) throws -> T,
        completion: @escaping @Sendable (Result<T, StoreFailure>) -> Void
    ) {
        enqueue(work, afterCommit: nil, completion: completion)
    }

    /// `submit` with `afterCommit` run on the writer's connection once the batch is committed,
    /// outside any transaction, before `completion` (which gets its failure if it throws).
    public func submit<T>(
        _ work: @escaping @Sendable (SQLiteConnection) throws -> T,
        afterCommit: @escaping @Sendable (SQLiteConnection) throws -> Void,
        completion: @escaping @Sendable (Result<T, StoreFailure>) -> Void
    ) {
        enqueue(work, afterCommit: afterCommit, completion: completion)
    }

    /// Queues `work`, whose result `completion` gets once the batch is committed.
    private func enqueue<T>(
        _ work: @escaping @Sendable (SQLiteConnection) throws -> T,
        afterCommit: (@Sendable (SQLiteConnection) throws -> Void)?,
        completion: @escaping @Sendable (Result<T, StoreFailure>) -> Void
    ) {
        nonisolated(unsafe) var result: T?  // written and read only on the writer thread
        enqueue(
            Job(
                work: { db, _ in result = try work(db) },
                afterCommit: afterCommit,
                finish: { error, _ in
                    if let error {
                        completion(.failure(Self.failure(error)))
                    } else {
                        completion(.success(result!))
                    }
                }), completion: { completion(.failure($0)) })
    }

    /// `submit` for work that returns nothing: queued without a box for its result.
    public func submit(
        _ work: @escaping @Sendable (SQLiteConnection) throws -> Void,
        completion: @escaping @Sendable (Result<Void, StoreFailure>) -> Void
    ) {
        enqueue(
            Job(
                work: { db, _ in try work(db) },
                finish: { error, _ in completion(error.map { .failure(Self.failure($0)) } ?? .success(())) }),
            completion: { completion(.failure($0)) })
    }

    /// `submit` for the work that stores an answer whose leaf is `leaf` (an evaluation): `work`
    /// is told where the batch's head of the leaf's chain will stand, and `completion` gets the
    /// answer's receipt once the batch, its heads included, is committed.
    public func submit(
        leaf: ReceiptLeaf, _ work: @escaping @Sendable (SQLiteConnection, HeadPlace) throws -> Void,
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        guard receipts != nil else { return completion(.failure(.unavailable("this writer issues no receipts"))) }
        enqueue(
            Job(
                work: { db, place in
                    guard let place else { throw StoreError.invalid("an answer's job runs with its head's place") }
                    try work(db, place)
                }, leaf: leaf,
                finish: { error, receipt in
                    if let receipt, error == nil { return completion(.success(receipt)) }
                    completion(.failure(Self.failure(error ?? StoreError.invalid("no receipt"))))
                }),
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
        let (committed, receipts) = commitTogether(batch)
        var errors = committed
        for (i, job) in batch.enumerated() where errors[i] == nil {
            guard let afterCommit = job.afterCommit else { continue }
            do { try afterCommit(connection) } catch { errors[i] = error }
        }
        if let observer {
            let failures = errors.compactMap { $0 }
            observer(
                Commit(
                    size: batch.count, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9,
                    failed: failures.count, firstError: failures.first.map { "\($0)" }))
        }
        for (i, job) in batch.enumerated() { job.finish(errors[i], receipts?.receipt(ofJob: i)) }
    }

    /// A committed batch's receipts (one signed tree per tenant and environment), and which
    /// tree and leaf each job's answer is (nil: none).
    private struct BatchReceipts {
        let trees: [ReceiptBatch]
        let leafOfJob: [(tree: Int, index: Int)?]

        func receipt(ofJob job: Int) -> Receipt? { leafOfJob[job].map { trees[$0.tree].receipt(at: $0.index) } }
    }

    /// Where the head of each leaf job's chain will stand, in job order (nil: no leaf). The
    /// chains of a batch are few (one, for a batch of one tenant's answers): they are compared
    /// one by one rather than hashed, job by job.
    private func places(of batch: [Job]) -> [HeadPlace?] {
        guard let receipts else { return [HeadPlace?](repeating: nil, count: batch.count) }
        var known: [HeadPlace] = []
        return batch.map { job in
            guard let leaf = job.leaf else { return nil }
            if let place = known.first(where: { $0.chain.tenant == leaf.tenant && $0.chain.environment == leaf.environment }) {
                return place
            }
            let place = receipts.nextPlace(tenant: leaf.tenant, environment: leaf.environment)
            known.append(place)
            return place
        }
    }

    /// Signs one head per tenant and environment over the answers of the batch's jobs that did
    /// not fail, and stores each in the open transaction; nil when no such job stores an answer.
    /// Throws when a head cannot be signed or stored: the transaction is then rolled back, as
    /// for a failed commit.
    private func appendHeads(_ batch: [Job], failed: [Error?]) throws -> BatchReceipts? {
        guard let receipts else { return nil }
        var chains: [(tenant: String, environment: String, leaves: [[UInt8]])] = []
        var leafOfJob = [(tree: Int, index: Int)?](repeating: nil, count: batch.count)
        for (i, job) in batch.enumerated() where failed[i] == nil {
            guard let leaf = job.leaf else { continue }
            let tree: Int
            if let found = chains.firstIndex(where: { leaf.belongs(to: $0.tenant, $0.environment) }) {
                tree = found
            } else {
                tree = chains.count
                chains.append((leaf.tenant, leaf.environment, []))
            }
            leafOfJob[i] = (tree, chains[tree].leaves.count)
            chains[tree].leaves.append(leaf.hash)
        }
        if chains.isEmpty { return nil }
        var trees: [ReceiptBatch] = []
        trees.reserveCapacity(chains.count)
        for chain in chains {
            guard let signed = receipts.issue(leafHashes: chain.leaves, tenant: chain.tenant, environment: chain.environment)
            else {
                throw StoreError.invalid("the receipt head could not be signed")
            }
            try SQLiteReceiptLog.insert(signed, into: connection)
            trees.append(signed)
        }
        return BatchReceipts(trees: trees, leafOfJob: leafOfJob)
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
    private func commitTogether(_ batch: [Job]) -> ([Error?], BatchReceipts?) {
        let none = [Error?](repeating: nil, count: batch.count)
        var receipts: BatchReceipts?
        let places = places(of: batch)
        do {
            try connection.transaction {
                for (job, place) in zip(batch, places) {
                    do { try job.work(connection, place) } catch { throw JobFailure(error: error) }
                }
                receipts = try appendHeads(batch, failed: none)
            }
            if let receipts { for tree in receipts.trees { self.receipts?.committed(tree) } }
            return (none, receipts)
        } catch let failure as JobFailure {
            if batch.count == 1 { return ([failure.error], nil) }
            return commitIsolated(batch)
        } catch {
            // BEGIN, the head or COMMIT failed: nothing of the batch is durable.
            return ([Error?](repeating: error, count: batch.count), nil)
        }
    }

    /// Runs the batch in one transaction, each job in its own savepoint.
    private func commitIsolated(_ batch: [Job]) -> ([Error?], BatchReceipts?) {
        var errors = [Error?](repeating: nil, count: batch.count)
        var receipts: BatchReceipts?
        // The same heads as the first attempt's: no chain has moved.
        let places = places(of: batch)
        do {
            try connection.transaction {
                for (i, job) in batch.enumerated() {
                    do {
                        try connection.savepoint { try job.work(connection, places[i]) }
                    } catch {
                        errors[i] = error
                    }
                }
                receipts = try appendHeads(batch, failed: errors)
            }
            if let receipts { for tree in receipts.trees { self.receipts?.committed(tree) } }
        } catch {
            // The head or the commit itself failed: nothing of the batch is durable.
            for i in errors.indices { errors[i] = errors[i] ?? error }
            receipts = nil
        }
        return (errors, receipts)
    }
}
