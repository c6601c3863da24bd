import Foundation
import InsightDomain
import InsightPostgres
import InsightStorage
import SQLiteClient
import Telemetry

/// Where the store of record is: SQLite in a state directory (the embedded default), or a
/// PostgreSQL database shared by several instances (`INSIGHTD_DATABASE_URL`).
public enum StoreLocation: Sendable, Equatable {
    case sqlite(stateDirectory: String)
    case postgres(url: String)

    /// The location the settings name.
    public init(_ settings: Settings) {
        if let url = settings.databaseURL {
            self = .postgres(url: url)
        } else {
            self = .sqlite(stateDirectory: settings.stateDirectory)
        }
    }
}

/// The store ports as one backend implements them, opened from the settings: the one place that
/// names the backends (SQLite in the state directory, or PostgreSQL), for the daemon
/// (`InsightService`), `insightctl` and the tests. Writes go through the backend's one writer,
/// started and stopped with the daemon.
public struct StoreBackend: Sendable {
    let ledger: any EvaluationLedger
    let credentials: any CredentialDirectory
    let administration: any CallerAdministration & ReportingStatsSource & VelocityHistory
    /// Decisions read back and counted against consumption reports (the admin view).
    let decisions: any DecisionReporting
    let authorizations: any AuthorizationStore
    let retention: any RetentionPurge
    /// A subject's evaluations (transparency) and its erasure (docs/api.md "The person's view").
    let history: any SubjectHistory
    let erasure: any SubjectErasure
    /// Model performance counts (docs/operations.md "Model performance").
    let performance: any ModelPerformanceSource
    let hashKeyRegistry: any HashKeyRegistry
    /// Every instance's chain of signed receipt heads.
    let receiptLog: any ReceiptLog
    /// The embedded store's subject index (its history, and the erasure's way to the rows);
    /// nil on PostgreSQL, whose database indexes the hashes itself.
    let subjects: SQLiteSubjectIndex?
    /// Which instance runs the periodic jobs (always this one on SQLite).
    let leadership: any JobLeadership
    /// Every caller of every tenant (for the reporting gauges).
    let everyCaller: @Sendable () throws -> [Caller]
    /// True while the store answers (for `/readyz`; SQLite always does).
    let isReachable: @Sendable () -> Bool
    /// Why the store did not answer last, for the log (nil on SQLite).
    let unreachableReason: @Sendable () -> String?
    private let startWrites: @Sendable () -> Void
    private let stopWrites: @Sendable () -> Void

    /// Opens the store the settings name (applying pending migrations, logged) and the ports over
    /// it; its writer signs the heads of the answers it commits with `receipts`.
    init(settings: Settings, now: Milliseconds, receipts: ReceiptIssuer, metrics: MetricsRegistry, logger: Logger) throws {
        let observer = Self.commitObserver(metrics: metrics, logger: logger)
        let applied: [String]
        let depth: @Sendable () -> Int
        switch StoreLocation(settings) {
        case .sqlite:
            let db: SQLiteConnection
            (db, applied) = try Database.openMigrated(path: settings.databasePath, now: now, cacheKiB: Database.writerCacheKiB)
            receipts.resume(after: try SQLiteReceiptLog.tip(of: receipts.instance, in: db))
            let writer = GroupCommitWriter(connection: db, capacity: settings.writeQueueCapacity, maxBatch: settings.commitBatch,
                                           receipts: receipts, observer: observer)
            receiptLog = try SQLiteReceiptLog(path: settings.databasePath)
            let administration = try SQLiteAdministration(path: settings.databasePath, writer: writer)
            let subjects = try SQLiteSubjectIndex(databasePath: settings.databasePath)
            self.subjects = subjects
            self.administration = administration
            decisions = administration
            everyCaller = { try administration.everyCaller() }
            ledger = SQLiteLedger(writer: writer)
            credentials = try SQLiteCredentialDirectory(path: settings.databasePath)
            authorizations = try SQLiteAuthorizationStore(path: settings.databasePath, writer: writer)
            retention = SQLiteRetention(writer: writer, index: subjects)
            history = subjects
            erasure = SQLiteSubjectErasure(writer: writer, index: subjects)
            performance = administration
            hashKeyRegistry = SQLiteHashKeyRegistry(path: settings.databasePath)
            leadership = SQLiteJobLeadership()
            isReachable = { true }
            unreachableReason = { nil }
            startWrites = {
                writer.start()
                subjects.start()
            }
            stopWrites = {
                writer.stop()
                subjects.stop()
            }
            metrics.collect("insightd_subject_index_lag_evaluations",
                            help: "Evaluations committed and not yet in the subject index (answered from the tail meanwhile).",
                            type: .gauge) { [(labels: [], value: Double(subjects.lag))] }
            depth = { writer.depth }
        case .postgres(let url):
            var postgres = PostgresSettings(url: url)
            postgres.writeQueueCapacity = settings.writeQueueCapacity
            postgres.commitBatch = settings.commitBatch
            subjects = nil
            let store: PostgresStore
            do {
                (store, applied) = try PostgresStore.open(settings: postgres, now: now, receipts: receipts, observer: observer)
            } catch {
                throw AppError("cannot open the PostgreSQL store (INSIGHTD_DATABASE_URL): \(error)")
            }
            let administration = store.administration
            self.administration = administration
            decisions = administration
            everyCaller = { try administration.everyCaller() }
            ledger = store.ledger
            credentials = store.credentials
            authorizations = store.authorizations
            retention = store.retention
            history = administration
            performance = administration
            erasure = store.erasure
            hashKeyRegistry = store.hashKeyRegistry
            receiptLog = store.receiptLog
            leadership = store.leadership
            isReachable = { store.isReachable }
            unreachableReason = { store.unreachableReason }
            startWrites = { store.start() }
            stopWrites = { store.stop() }
            depth = { store.writeQueueDepth }
        }
        for name in applied { logger.info("migration applied", [("migration", .string(name))]) }
        metrics.collect("insightd_write_queue_depth", help: "Writes waiting for the writer.", type: .gauge) {
            [(labels: [], value: Double(depth()))]
        }
    }

    /// Starts taking writes.
    func start() { startWrites() }

    /// Commits what is queued and closes the store.
    func stop() { stopWrites() }

    /// The registration of callers and keys, for an operator's tool: opens the store (creating
    /// the state directory and applying migrations if needed).
    public static func registration(_ location: StoreLocation, now: Milliseconds) throws -> any CallerRegistration {
        switch location {
        case .sqlite(let directory): CallerRegistry(try openForTools(stateDirectory: directory, now: now))
        case .postgres(let url): try PostgresStore.registration(settings: PostgresSettings(url: url), now: now)
        }
    }

    /// The captured training vectors, for an operator's export (`insightctl training export`).
    public static func trainingVectors(_ location: StoreLocation, now: Milliseconds) throws -> any TrainingVectorSource {
        switch location {
        case .sqlite(let directory): SQLiteTrainingVectors(try openForTools(stateDirectory: directory, now: now))
        case .postgres(let url): try PostgresStore.trainingVectors(settings: PostgresSettings(url: url), now: now)
        }
    }

    /// The stored receipt heads, for an operator's check (`insightctl receipts verify`).
    public static func receiptLog(_ location: StoreLocation, now: Milliseconds) throws -> any ReceiptLog {
        switch location {
        case .sqlite(let directory):
            _ = try openForTools(stateDirectory: directory, now: now)
            return try SQLiteReceiptLog(path: Settings.databasePath(stateDirectory: directory))
        case .postgres(let url):
            return try PostgresStore.open(settings: PostgresSettings(url: url), now: now).store.receiptLog
        }
    }

    /// Deletes everything older than `cutoff` at once (`insightctl purge`, beside or without a daemon).
    public static func purge(_ location: StoreLocation, olderThan cutoff: Milliseconds, now: Milliseconds) throws -> RetentionReport {
        switch location {
        case .sqlite(let directory): try Retention(try openForTools(stateDirectory: directory, now: now)).purge(olderThan: cutoff)
        case .postgres(let url): try PostgresStore.purge(settings: PostgresSettings(url: url), olderThan: cutoff, now: now)
        }
    }

    /// Applies pending migrations; returns their names.
    public static func migrate(_ location: StoreLocation, now: Milliseconds) throws -> [String] {
        switch location {
        case .sqlite(let directory):
            try createStateDirectory(directory)
            return try Database.openMigrated(path: Settings.databasePath(stateDirectory: directory), now: now).1
        case .postgres(let url):
            return try PostgresStore.migrate(settings: PostgresSettings(url: url), now: now)
        }
    }

    /// A consistent copy of the database, taken online, at `target` (which must not exist);
    /// returns the pages copied. The copy holds every hash and caller: it is created private,
    /// named only once whole, and checked.
    public static func backup(_ location: StoreLocation, to target: String) throws -> Int {
        switch location {
        case .sqlite(let directory):
            return try backup(stateDirectory: directory, to: target)
        case .postgres:
            throw AppError("""
                the store is PostgreSQL (INSIGHTD_DATABASE_URL): back it up with its own tools — pg_dump for a \
                logical copy, pg_basebackup with WAL archiving (or your provider's snapshots and point-in-time \
                recovery) for a physical one; insightctl backup copies only the embedded SQLite store
                """)
        }
    }

    private static func backup(stateDirectory directory: String, to target: String) throws -> Int {
        let source = try Database.open(path: Settings.databasePath(stateDirectory: directory), create: false)
        var pages = 0
        try PrivateFile.create(target) { copy in
            pages = try source.backup(to: copy)
            let check = try SQLiteConnection(path: copy).scalarText("PRAGMA integrity_check")
            guard check == "ok" else { throw AppError("the copy of \(target) failed its integrity check: \(check ?? "?")") }
        }
        return pages
    }

    private static func openForTools(stateDirectory: String, now: Milliseconds) throws -> SQLiteConnection {
        try createStateDirectory(stateDirectory)
        return try Database.openMigrated(path: Settings.databasePath(stateDirectory: stateDirectory), now: now).0
    }

    static func createStateDirectory(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    /// What each commit of the writer reports goes to the store metrics and the failure log.
    private static func commitObserver(metrics: MetricsRegistry, logger: Logger) -> @Sendable (StoreCommit) -> Void {
        let commitDuration = metrics.histogram("insightd_store_commit_duration_seconds",
                                               help: "Duration of one group commit (fsync included).", buckets: Buckets.commitDuration)
            .labels()
        let batchSize = metrics.histogram("insightd_store_commit_batch_size", help: "Writes committed together.",
                                          buckets: Buckets.powersOfTwo).labels()
        let writeFailures = metrics.counter("insightd_store_write_failures_total",
                                            help: "Writes the store could not commit (answered 503).").labels()
        let failureLog = StoreFailureLog(logger: logger)
        return { commit in
            commitDuration.observe(commit.seconds)
            batchSize.observe(Double(commit.size))
            if let error = commit.firstError {
                writeFailures.increment(by: Double(commit.failed))
                failureLog.failed(commit.failed, error: error)
            } else {
                failureLog.committed()
            }
        }
    }
}
