import Foundation
import InsightDomain
import InsightStorage
import SQLiteClient
import Telemetry

/// The store ports as one backend implements them, opened from the settings: the one place that
/// names the backend (SQLite in the state directory), for the daemon (`InsightService`),
/// `insightctl` and the tests. Writes go through one group-commit writer, started and stopped
/// with the daemon.
public struct StoreBackend: Sendable {
    let ledger: any EvaluationLedger
    let credentials: any CredentialDirectory
    let administration: any CallerAdministration & ReportingStatsSource & VelocityHistory
    let authorizations: any AuthorizationStore
    let retention: any RetentionPurge
    let hashKeyRegistry: any HashKeyRegistry
    /// Every caller of every tenant (for the reporting gauges).
    let everyCaller: @Sendable () throws -> [Caller]
    private let writer: GroupCommitWriter

    /// Opens the database (applying pending migrations, logged) and the ports over it.
    init(settings: Settings, now: Milliseconds, metrics: MetricsRegistry, logger: Logger) throws {
        let (db, applied) = try Database.openMigrated(path: settings.databasePath, now: now, cacheKiB: Database.writerCacheKiB)
        for name in applied { logger.info("migration applied", [("migration", .string(name))]) }
        let writer = Self.makeWriter(db, settings: settings, metrics: metrics, logger: logger)
        self.writer = writer
        let administration = try SQLiteAdministration(path: settings.databasePath, writer: writer)
        self.administration = administration
        everyCaller = { try administration.everyCaller() }
        ledger = SQLiteLedger(writer: writer)
        credentials = try SQLiteCredentialDirectory(path: settings.databasePath)
        authorizations = try SQLiteAuthorizationStore(path: settings.databasePath, writer: writer)
        retention = SQLiteRetention(writer: writer)
        hashKeyRegistry = SQLiteHashKeyRegistry(path: settings.databasePath)
        metrics.collect("insightd_write_queue_depth", help: "Writes waiting for the writer.", type: .gauge) {
            [(labels: [], value: Double(writer.depth))]
        }
    }

    /// Starts taking writes.
    func start() { writer.start() }

    /// Commits what is queued and closes the store.
    func stop() { writer.stop() }

    /// The registration of callers and keys, for an operator's tool: opens (creating the state
    /// directory and applying migrations if needed) the store of `stateDirectory`.
    public static func registration(stateDirectory: String, now: Milliseconds) throws -> any CallerRegistration {
        CallerRegistry(try openForTools(stateDirectory: stateDirectory, now: now))
    }

    /// Deletes everything older than `cutoff` at once (`insightctl purge`, beside or without a daemon).
    public static func purge(stateDirectory: String, olderThan cutoff: Milliseconds, now: Milliseconds) throws -> RetentionReport {
        try Retention(try openForTools(stateDirectory: stateDirectory, now: now)).purge(olderThan: cutoff)
    }

    /// Applies pending migrations; returns their names.
    public static func migrate(stateDirectory: String, now: Milliseconds) throws -> [String] {
        try createStateDirectory(stateDirectory)
        return try Database.openMigrated(path: Settings.databasePath(stateDirectory: stateDirectory), now: now).1
    }

    /// A consistent copy of the database, taken online, at `target` (which must not exist);
    /// returns the pages copied. The copy holds every hash and caller: it is created private,
    /// named only once whole, and checked.
    public static func backup(stateDirectory: String, to target: String) throws -> Int {
        let source = try Database.open(path: Settings.databasePath(stateDirectory: stateDirectory), create: false)
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

    /// The group-commit writer over `db`, observed by the store metrics and the failure log.
    private static func makeWriter(_ db: SQLiteConnection, settings: Settings, metrics: MetricsRegistry,
                                   logger: Logger) -> GroupCommitWriter {
        let commitDuration = metrics.histogram("insightd_store_commit_duration_seconds",
                                               help: "Duration of one group commit (fsync included).", buckets: Buckets.commitDuration)
            .labels()
        let batchSize = metrics.histogram("insightd_store_commit_batch_size", help: "Writes committed together.",
                                          buckets: Buckets.powersOfTwo).labels()
        let writeFailures = metrics.counter("insightd_store_write_failures_total",
                                            help: "Writes the store could not commit (answered 503).").labels()
        let failureLog = StoreFailureLog(logger: logger)
        return GroupCommitWriter(connection: db, capacity: settings.writeQueueCapacity, maxBatch: settings.commitBatch,
                                 observer: { commit in
                                     commitDuration.observe(commit.seconds)
                                     batchSize.observe(Double(commit.size))
                                     if let error = commit.firstError {
                                         writeFailures.increment(by: Double(commit.failed))
                                         failureLog.failed(commit.failed, error: error)
                                     } else {
                                         failureLog.committed()
                                     }
                                 })
    }
}
