import Foundation
import InsightDomain
import PostgresClient
import Synchronization

/// One statement of a write job: SQL prepared on the writer's connection under `name` (one
/// name, one SQL text), with its parameters.
struct WriteStatement: Sendable {
    let name: String
    let sql: String
    let parameters: [PostgresValue?]
}

/// The writer of the PostgreSQL store, on its own thread with its own connection. Jobs queue up
/// from any thread; the writer sends every queued job's statements (up to `maxBatch` jobs) in
/// pipeline mode as one implicit transaction, ended by one sync: the whole batch costs one round
/// trip and one WAL flush (`synchronous_commit` on), and no job completes before the server
/// acknowledged the commit.
///
/// A job is a fixed list of statements, built before it is queued, so that nothing waits for the
/// client between them; each decides for itself in SQL (conditional inserts, data-modifying CTEs
/// that return what they did), so that expected outcomes (a duplicate, a conflict, an unknown id)
/// are answers, not errors. A statement that still fails aborts the PostgreSQL transaction: the
/// batch is sent again without the job it belongs to, so one failing job never fails the others.
/// A deadlock or serialization failure (two instances' batches taking the same locks in another
/// order) sends the batch again as it was.
///
/// The evaluations of a batch (`EvaluationRows`, whose jobs need no answer but success) are
/// written by one statement for all of them when the batch holds several. When that statement
/// fails, the batch is sent again with each evaluation's own statement, and the rule above finds
/// the job that fails.
///
/// The answers of a batch's evaluations of one tenant and environment are the leaves of one
/// Merkle tree: each attempt's heads (one per tree) are signed by the `ReceiptIssuer` and
/// inserted by the attempt's last statements, in the batch's
/// transaction, so each evaluation completes with its receipt. The chain's tip is read from the
/// database on every new connection and after the head's statement fails (a batch whose commit
/// was not acknowledged may have stored its head): the chain never forks.
///
/// When the connection breaks with a batch in flight (the server crashed, or failed over to its
/// standby), whether the batch committed is unknown: the writer connects again, to whichever
/// server takes writes now, and asks (`CommitMark`, for up to `failoverWaitSeconds`). A
/// batch that did not commit is sent again, once; one that committed completes its evaluations
/// and answers its other jobs unavailable (their answers were lost with the connection; sent
/// again with the same ids, they find what committed); when no server answers, every job is
/// answered unavailable. No job completes unless its batch is known to be committed. A connection
/// found lost between batches is looked for the same way before the next batch is sent. After a
/// failed attempt to connect, batches fail at once until the reconnect delay has passed.
public final class PostgresWriter: @unchecked Sendable {
    // @unchecked: `connection`, `retryAt`, `lastConnectError` and `mark` are touched only by
    // the queue's thread.
    private struct Job {
        /// What the job writes; a build that threw fails the job.
        let work: Result<Work, any Error>
        /// The leaf of the answer the job stores (an evaluation's); such a job completes with its
        /// receipt.
        var leaf: ReceiptLeaf? = nil
        /// The key of the retry entry the job stores with its answer: the head's statement names
        /// the head in it (migration 0023).
        var retryKey: [UInt8]? = nil
        let finish: ([PostgresResult]?, (any Error)?, Receipt?) -> Void
    }

    /// A job's statements, or an evaluation's rows: their own statement, or their part of the
    /// batch's merged one.
    enum Work {
        case statements([WriteStatement])
        case evaluation(EvaluationRows)

        var statements: [WriteStatement] {
            switch self {
            case .statements(let list): list
            case .evaluation(let rows): [rows.statement]
            }
        }

        var evaluation: EvaluationRows? {
            if case .evaluation(let rows) = self { rows } else { nil }
        }
    }

    /// What one commit did, for metrics and logs (as `GroupCommitWriter.Commit`).
    public typealias Commit = StoreCommit

    private let settings: PostgresSettings
    private let queue: WriterQueue<Job>
    private var connection: PostgresConnection?
    private var retryAt: UInt64 = 0
    private var lastConnectError = "not connected yet"
    private var mark = CommitMark()
    /// Times a batch lost with its connection, and found not committed, is sent again.
    static let lostBatchResends = 1
    /// Most jobs waiting before new ones are refused (back-pressure).
    public var capacity: Int { queue.capacity }
    /// Most jobs committed together.
    public var maxBatch: Int { queue.maxBatch }
    /// Times a batch is sent again after a deadlock or serialization failure before its job fails.
    static let transientRetries = 3
    private let observer: (@Sendable (Commit) -> Void)?
    /// Signs the head of each batch's answers; nil for a writer that stores no evaluation.
    private let receipts: ReceiptIssuer?
    /// Whether the chain's tip must be read from the database before the next head: at the
    /// start, on a new connection, and after a head's statement failed.
    private var tipUnknown = true
    /// Merged statements committed so far (tests see with it which path a batch took).
    let mergedStatementsCommitted = Atomic<Int>(0)

    init(settings: PostgresSettings, receipts: ReceiptIssuer? = nil, observer: (@Sendable (Commit) -> Void)? = nil) {
        self.settings = settings
        queue = WriterQueue(
            threadName: "insightd-pg-writer", capacity: settings.writeQueueCapacity,
            maxBatch: settings.commitBatch)
        self.observer = observer
        self.receipts = receipts
    }

    /// Starts the writer thread.
    func start() {
        queue.start(
            process: { [self] batch in commit(batch) },
            whenStopped: { [self] in
                if let connection, connection.isConnected { try? mark.forget(on: connection, now: Self.now()) }
                connection = nil
            })
    }

    /// Jobs waiting now.
    public var depth: Int { queue.depth }

    /// Queues the statements `build` makes (on the caller's thread); after the commit, `decode`
    /// turns their results, in order, into the job's answer, and `completion` gets it on the
    /// writer thread. A `build` or `decode` that throws fails the job. Answers `.overloaded` at
    /// once when the queue is full, `.unavailable` after `stop()`.
    func submit<T>(
        _ build: () throws -> [WriteStatement],
        decode: @escaping @Sendable ([PostgresResult]) throws -> T,
        completion: @escaping @Sendable (Result<T, StoreFailure>) -> Void
    ) {
        enqueue(
            Job(
                work: Result { .statements(try build()) },
                finish: { results, error, _ in
                    if let error { return completion(.failure(Self.failure(error))) }
                    do {
                        completion(.success(try decode(results ?? [])))
                    } catch {
                        completion(.failure(Self.failure(error)))
                    }
                }), refuse: { completion(.failure($0)) })
    }

    /// Queues the evaluation `build` makes (on the caller's thread), which the writer writes with
    /// the other evaluations of its batch; its answer's leaf is `leaf`, its retry entry's
    /// key `retryKey` (nil: none), and `completion` gets the answer's receipt once the batch, its
    /// head included, is committed.
    func submit(
        evaluation build: () throws -> Work, leaf: ReceiptLeaf, retryKey: [UInt8]? = nil,
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        guard receipts != nil else { return completion(.failure(.unavailable("this writer issues no receipts"))) }
        enqueue(
            Job(
                work: Result { try build() }, leaf: leaf, retryKey: retryKey,
                finish: { _, error, receipt in
                    if let receipt, error == nil { return completion(.success(receipt)) }
                    completion(.failure(Self.failure(error ?? PostgresStoreError("no receipt"))))
                }), refuse: { completion(.failure($0)) })
    }

    /// What a caller is told of a job that failed.
    private static func failure(_ error: any Error) -> StoreFailure {
        if let failure = error as? StoreFailure { return failure }
        return .unavailable(describe(error))
    }

    /// An error as the log may show it: a server error by its SQLSTATE and constraint only,
    /// since its message may quote a parameter.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PostgresError else { return "\(error)" }
        if error.kind == .server {
            return "PostgreSQL error \(error.sqlState ?? "?")" + (error.constraint.map { " (constraint \($0))" } ?? "")
        }
        return "\(error)"
    }

    private func enqueue(_ job: Job, refuse: (StoreFailure) -> Void) {
        if let refusal = queue.enqueue(job) { refuse(refusal) }
    }

    /// Finishes every queued job, then stops the thread and closes the connection. Later
    /// submissions fail.
    func stop() { queue.stop() }

    private func commit(_ batch: [Job]) {
        let started = DispatchTime.now().uptimeNanoseconds
        let outcomes = commitTogether(batch)
        if let observer {
            let failures = outcomes.compactMap(\.error)
            observer(
                Commit(
                    size: batch.count, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9,
                    failed: failures.count, firstError: failures.first.map(Self.describe)))
        }
        for (job, outcome) in zip(batch, outcomes) { job.finish(outcome.results, outcome.error, outcome.receipt) }
    }

    private struct Outcome {
        var results: [PostgresResult]?
        var error: (any Error)?
        var receipt: Receipt?
    }

    /// The statement that stores a batch's head and leaves, and names the head in the retry
    /// entries (keys `retryKeys`) stored with the batch's answers: the entries are the batch's
    /// earlier statements, so one statement after them sets them all.
    private static func headStatement(_ batch: ReceiptBatch, retryKeys: [[UInt8]]) -> WriteStatement {
        let head = batch.head.head
        let parameters: [PostgresValue?] = [
            .text(head.instance), .int64(head.sequence), .int64(head.time), .text(batch.head.jws), .bytea(batch.leaves),
            .text(head.tenant ?? ""), .text(head.environment ?? "")
        ]
        guard !retryKeys.isEmpty else {
            return WriteStatement(
                name: "insightd_receipt_head",
                sql: """
                    INSERT INTO receipt_heads (instance, sequence, made_at, jws, leaves, tenant, environment)
                    VALUES ($1, $2, $3, $4, $5, $6, $7)
                    """,
                parameters: parameters)
        }
        return WriteStatement(
            name: "insightd_receipt_head_of_retries",
            sql: """
                WITH head AS (
                    INSERT INTO receipt_heads (instance, sequence, made_at, jws, leaves, tenant, environment)
                    VALUES ($1::text, $2::bigint, $3::bigint, $4::text, $5::bytea, $6::text, $7::text))
                UPDATE retry_entries
                SET head_instance = $1::text, head_tenant = $6::text, head_environment = $7::text, head_sequence = $2::bigint
                WHERE request_key = ANY($8::bytea[])
                """,
            parameters: parameters + [SQLValues.arrayLiteral(retryKeys.map { SQLValues.arrayElement(PostgresValue.bytea($0)) })])
    }

    /// Reads where each of this instance's chains stands in the database, once it is unknown.
    private func learnTip(_ connection: PostgresConnection) throws(PostgresError) {
        guard let receipts, tipUnknown else { return }
        let rows = try connection.query(PostgresReceiptLog.latestSQL, [nil, nil, .text(receipts.instance)])
        receipts.resume(after: rows.compactMap { $0.text(0) }.compactMap(SignedHead.init(jws:)))
        tipUnknown = false
    }

    /// The heads of an attempt (one per tenant and environment of its answers), and which tree
    /// and leaf each job's answer is.
    private struct Attempt {
        var trees: [ReceiptBatch] = []
        var leafOf: [Int: (tree: Int, index: Int)] = [:]

        func receipt(ofJob job: Int) -> Receipt? { leafOf[job].map { trees[$0.tree].receipt(at: $0.index) } }
    }

    /// Sends the batch until it commits, leaving out each job whose statement failed.
    private func commitTogether(_ batch: [Job]) -> [Outcome] {
        var outcomes = [Outcome?](repeating: nil, count: batch.count)
        var works: [Work?] = Array(repeating: nil, count: batch.count)
        var pending: [Int] = []
        for (index, job) in batch.enumerated() {
            switch job.work {
            case .success(let work):
                works[index] = work
                pending.append(index)
            case .failure(let error):
                outcomes[index] = Outcome(error: error)
            }
        }
        var transientFailures = 0
        var lostBatchResends = 0
        var merging = true
        while !pending.isEmpty {
            guard let connection = usableConnection() else {
                let failure = StoreFailure.unavailable("PostgreSQL unreachable: \(lastConnectError)")
                for index in pending { outcomes[index] = Outcome(error: failure) }
                break
            }
            // Each statement prepared (once per connection), and the jobs each belongs to: one,
            // or every evaluation of the merged statement, sent where the first of them stood.
            let evaluations = merging ? pending.filter { works[$0]?.evaluation != nil } : []
            let merged = evaluations.count > 1 ? Set(evaluations) : []
            var queries: [PostgresQuery] = []
            var owners: [[Int]] = []
            var unprepared: (jobs: [Int], error: PostgresError)?
            for index in pending where unprepared == nil {
                let jobs: [Int], list: [WriteStatement]
                if merged.contains(index) {
                    guard index == evaluations[0] else { continue }
                    jobs = evaluations
                    list = [EvaluationRows.statement(merging: evaluations.compactMap { works[$0]?.evaluation })]
                } else {
                    jobs = [index]
                    list = works[index]?.statements ?? []
                }
                do {
                    for statement in list {
                        queries.append(.prepared(try connection.prepare(statement.name, statement.sql), statement.parameters))
                        owners.append(jobs)
                    }
                } catch {
                    unprepared = (jobs, error)
                }
            }
            // The heads of this attempt's answers, last: their leaves are the evaluations sent
            // now, one tree per tenant and environment (one for a batch of one tenant's answers).
            var attempt: Attempt?
            if unprepared == nil, receipts != nil, pending.contains(where: { batch[$0].leaf != nil }) {
                do {
                    try learnTip(connection)
                    var chains: [(tenant: String, environment: String, leaves: [[UInt8]], retryKeys: [[UInt8]])] = []
                    var drafted = Attempt()
                    for index in pending {
                        guard let leaf = batch[index].leaf else { continue }
                        let tree: Int
                        if let found = chains.firstIndex(where: { leaf.belongs(to: $0.tenant, $0.environment) }) {
                            tree = found
                        } else {
                            tree = chains.count
                            chains.append((leaf.tenant, leaf.environment, [], []))
                        }
                        drafted.leafOf[index] = (tree, chains[tree].leaves.count)
                        chains[tree].leaves.append(leaf.hash)
                        if let key = batch[index].retryKey { chains[tree].retryKeys.append(key) }
                    }
                    for chain in chains {
                        guard
                            let signed = receipts?.issue(
                                leafHashes: chain.leaves, tenant: chain.tenant, environment: chain.environment)
                        else { break }
                        drafted.trees.append(signed)
                    }
                    guard drafted.trees.count == chains.count else {
                        for index in drafted.leafOf.keys {
                            outcomes[index] = Outcome(error: PostgresStoreError("the receipt head could not be signed"))
                        }
                        pending.removeAll { drafted.leafOf[$0] != nil }
                        continue
                    }
                    for (signed, chain) in zip(drafted.trees, chains) {
                        let statement = Self.headStatement(signed, retryKeys: chain.retryKeys)
                        queries.append(.prepared(try connection.prepare(statement.name, statement.sql), statement.parameters))
                        owners.append([])
                    }
                    attempt = drafted
                } catch {
                    unprepared = ([], error)
                }
            }
            if let unprepared {
                if unprepared.error.isConnectionFailure || !connection.isConnected || unprepared.jobs.isEmpty {
                    if unprepared.jobs.isEmpty { tipUnknown = true }
                    dropConnection(unprepared.error)
                    for index in pending { outcomes[index] = Outcome(error: unprepared.error) }
                    break
                }
                if unprepared.jobs.count > 1 {
                    merging = false
                    continue
                }
                outcomes[unprepared.jobs[0]] = Outcome(error: unprepared.error)
                pending.removeAll { $0 == unprepared.jobs[0] }
                continue
            }
            let marked: [Result<PostgresResult, PostgresError>]
            do {
                let statement = mark.next(now: Self.now())
                marked = try connection.pipeline(
                    [
                        .prepared(
                            try connection.prepare(statement.name, statement.sql),
                            statement.parameters)
                    ] + queries)
            } catch {
                // The connection broke: whether the server committed the batch (its head included) is
                // unknown until asked; the chain's tip is read again either way.
                tipUnknown = true
                dropConnection(error)
                let outcome = resolveLostBatch()
                if outcome == .notCommitted && lostBatchResends < Self.lostBatchResends {
                    lostBatchResends += 1
                    continue
                }
                for index in pending {
                    switch CommitMark.answer(outcome, isEvaluation: works[index]?.evaluation != nil) {
                    case .success:
                        // Committed with the batch's head: the evaluation's receipt holds.
                        outcomes[index] = Outcome(results: [], receipt: attempt?.receipt(ofJob: index))
                    case .failure(let failure): outcomes[index] = Outcome(error: failure)
                    }
                }
                break
            }
            if case .failure(let error) = marked[0] {
                // Not even the mark was written: the batch did not commit.
                if error.isRetryableTransactionFailure && transientFailures < Self.transientRetries {
                    transientFailures += 1
                    continue
                }
                if !connection.isConnected || error.isReadOnlySession { dropConnection(error) }
                for index in pending { outcomes[index] = Outcome(error: error) }
                break
            }
            let results = Array(marked.dropFirst())
            if let failed = results.firstIndex(where: { if case .failure(let e) = $0 { e.kind != .pipelineAborted } else { false } }),
                case .failure(let error) = results[failed]
            {
                // A head that could not be stored: its sequence was taken (a batch whose commit was not
                // acknowledged stored it), so the tip is read again and the batch sent again.
                let headFailed = owners[failed].isEmpty
                if headFailed { tipUnknown = true }
                if (error.isRetryableTransactionFailure || headFailed) && transientFailures < Self.transientRetries {
                    transientFailures += 1
                    continue
                }
                if headFailed {
                    for index in pending { outcomes[index] = Outcome(error: error) }
                    break
                }
                if Self.failsEveryJob(error) {
                    if !connection.isConnected || error.isReadOnlySession { dropConnection(error) }
                    for index in pending { outcomes[index] = Outcome(error: error) }
                    break
                }
                // A merged statement that failed: each job's own statement finds the one to leave out.
                if owners[failed].count > 1 {
                    merging = false
                    continue
                }
                let job = owners[failed][0]
                outcomes[job] = Outcome(error: error)
                pending.removeAll { $0 == job }
                continue
            }
            var byJob: [Int: [PostgresResult]] = [:]
            for (jobs, result) in zip(owners, results) where !jobs.isEmpty {
                if jobs.count > 1 {
                    mergedStatementsCommitted.add(1, ordering: .relaxed)
                    continue
                }
                if case .success(let rows) = result { byJob[jobs[0], default: []].append(rows) }
            }
            for tree in attempt?.trees ?? [] { receipts?.committed(tree) }
            for index in pending {
                outcomes[index] = Outcome(
                    results: byJob[index] ?? [],
                    receipt: attempt?.receipt(ofJob: index))
            }
            pending.removeAll()
        }
        return outcomes.map { $0 ?? Outcome(error: StoreFailure.unavailable("not committed")) }
    }

    /// Errors of the server rather than of a job (connection, resources, shutdown, internal):
    /// sending the batch again without one job would fail the same way.
    private static func failsEveryJob(_ error: PostgresError) -> Bool {
        guard error.kind == .server, let state = error.sqlState else { return true }
        return error.isReadOnlySession
            || ["08", "53", "57", "58", "XX"].contains(String(state.prefix(2))) && state != "57014"
    }

    /// After the connection broke with a batch in flight: connects again (to whichever server
    /// takes writes now) and asks what became of the batch. The connection that answered is kept
    /// for what follows.
    private func resolveLostBatch() -> CommitOutcome {
        guard let (fresh, outcome) = reconnectAfterLoss({ try mark.check(on: $0, now: Self.now()) }) else {
            return .unknown(lastConnectError)
        }
        connection = fresh
        return outcome
    }

    /// After a connection that worked was lost (the server crashed, or its standby is being
    /// promoted): connects again, to whichever server takes writes, every reconnect delay for up
    /// to `failoverWaitSeconds`, and runs `ask` on the new connection; nil when none answered in
    /// time (later batches then fail at once until the reconnect delay has passed).
    private func reconnectAfterLoss<T>(_ ask: (PostgresConnection) throws -> T) -> (PostgresConnection, T)? {
        let pause = UInt64(settings.reconnectDelaySeconds * 1e9)
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(settings.failoverWaitSeconds * 1e9)
        while true {
            do {
                let fresh = try settings.connect()
                return (fresh, try ask(fresh))
            } catch {
                lastConnectError = Self.describe(error)
            }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                retryAt = now + pause
                return nil
            }
            usleep(useconds_t(min(pause, deadline - now) / 1_000))
        }
    }

    private static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

    /// The writer's connection: the one it has if it is still up; else, when that one was just
    /// lost, a new one found within the failover wait; else a new one, unless an attempt failed
    /// less than the reconnect delay ago.
    private func usableConnection() -> PostgresConnection? {
        if let connection {
            if connection.poll() { return connection }
            self.connection = nil
            lastConnectError = "the connection was lost"
            self.connection = reconnectAfterLoss { _ in () }?.0
            return self.connection
        }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now >= retryAt else { return nil }
        do {
            let connection = try settings.connect()
            self.connection = connection
            tipUnknown = true
            return connection
        } catch {
            lastConnectError = "\(error)"
            retryAt = now + UInt64(settings.reconnectDelaySeconds * 1e9)
            return nil
        }
    }

    private func dropConnection(_ error: any Error) {
        connection = nil
        tipUnknown = true
        lastConnectError = Self.describe(error)
    }
}
