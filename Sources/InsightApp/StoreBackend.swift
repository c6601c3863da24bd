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

/// The store of record the settings name, opened: SQLite in the state directory (`SQLiteStore`)
/// or PostgreSQL shared by several instances (`PostgresStore`), each giving the same
/// `StorePorts`. The one place that names the engines, for the daemon (`InsightService`),
/// `insightctl` and the tests. As a part of the daemon's lifecycle it starts the store's writer
/// and, stopping, commits what is queued and closes the store.
public struct StoreBackend: Service {
    /// The ports the use cases and jobs are wired to.
    let ports: StorePorts

    /// Opens the store the settings name (applying pending migrations, logged) and the ports over
    /// it; its writer signs the heads of the answers it commits with `receipts`.
    init(settings: Settings, now: Milliseconds, receipts: ReceiptIssuer, metrics: MetricsRegistry, logger: Logger) throws {
        let observer = Self.commitObserver(metrics: metrics, logger: logger)
        let applied: [String]
        switch StoreLocation(settings) {
        case .sqlite:
            var sqlite = SQLiteSettings(path: settings.databasePath)
            sqlite.writeQueueCapacity = settings.writeQueueCapacity
            sqlite.commitBatch = settings.commitBatch
            let store: SQLiteStore
            (store, applied) = try SQLiteStore.open(settings: sqlite, now: now, receipts: receipts, observer: observer)
            let subjects = store.subjects
            metrics.collect(
                "insightd_subject_index_lag_evaluations",
                help: "Evaluations committed and not yet in the subject index (answered from the tail meanwhile).",
                type: .gauge
            ) { [(labels: [], value: Double(subjects.lag))] }
            ports = store.ports
        case .postgres(let url):
            var postgres = PostgresSettings(url: url)
            postgres.writeQueueCapacity = settings.writeQueueCapacity
            postgres.commitBatch = settings.commitBatch
            let store: PostgresStore
            do {
                (store, applied) = try PostgresStore.open(settings: postgres, now: now, receipts: receipts, observer: observer)
            } catch {
                throw AppError("cannot open the PostgreSQL store (INSIGHTD_DATABASE_URL): \(error)")
            }
            ports = store.ports
        }
        for name in applied { logger.info("migration applied", [("migration", .string(name))]) }
        let store = ports.store
        metrics.collect("insightd_write_queue_depth", help: "Writes waiting for the writer.", type: .gauge) {
            [(labels: [], value: Double(store.writeQueueDepth))]
        }
    }

    /// Starts taking writes.
    func start() { ports.store.start() }

    /// Commits what is queued and closes the store.
    func stop() { ports.store.stop() }

    /// The registration of callers and keys, for an operator's tool: opens the store (creating
    /// the state directory and applying migrations if needed).
    public static func registration(_ location: StoreLocation, now: Milliseconds) throws -> any CallerRegistration {
        switch location {
        case .sqlite(let directory): try SQLiteStore.registration(path: try databasePath(creating: directory), now: now)
        case .postgres(let url): try PostgresStore.registration(settings: PostgresSettings(url: url), now: now)
        }
    }

    /// The captured training vectors, for an operator's export (`insightctl training export`).
    public static func trainingVectors(_ location: StoreLocation, now: Milliseconds) throws -> any TrainingVectorSource {
        switch location {
        case .sqlite(let directory): try SQLiteStore.trainingVectors(path: try databasePath(creating: directory), now: now)
        case .postgres(let url): try PostgresStore.trainingVectors(settings: PostgresSettings(url: url), now: now)
        }
    }

    /// The stored receipt heads, for an operator's check (`insightctl receipts verify`).
    public static func receiptLog(_ location: StoreLocation, now: Milliseconds) throws -> any ReceiptLog {
        switch location {
        case .sqlite(let directory):
            return try SQLiteStore.receiptLog(path: try databasePath(creating: directory), now: now)
        case .postgres(let url):
            return try PostgresStore.open(settings: PostgresSettings(url: url), now: now).store.receiptLog
        }
    }

    /// Runs `body` with the store's intervention catalogue, its writer started, and stops it after
    /// (`insightctl interventions`, beside or without a daemon; writes go through the engine's
    /// writer as the daemon's do).
    public static func withInterventions<T>(
        _ location: StoreLocation, now: Milliseconds, _ body: (any InterventionCatalog) throws -> T
    ) throws -> T {
        switch location {
        case .sqlite(let directory):
            let (store, _) = try SQLiteStore.open(settings: SQLiteSettings(path: try databasePath(creating: directory)), now: now)
            store.start()
            defer { store.stop() }
            return try body(store.interventions)
        case .postgres(let url):
            let (store, _) = try PostgresStore.open(settings: PostgresSettings(url: url), now: now)
            store.start()
            defer { store.stop() }
            return try body(store.interventions)
        }
    }

    /// Deletes everything older than `cutoff` at once (`insightctl purge`, beside or without a daemon).
    public static func purge(_ location: StoreLocation, olderThan cutoff: Milliseconds, now: Milliseconds) throws -> RetentionReport {
        switch location {
        case .sqlite(let directory):
            try SQLiteStore.purge(path: try databasePath(creating: directory), olderThan: cutoff, now: now)
        case .postgres(let url): try PostgresStore.purge(settings: PostgresSettings(url: url), olderThan: cutoff, now: now)
        }
    }

    /// Applies pending migrations; returns their names.
    public static func migrate(_ location: StoreLocation, now: Milliseconds) throws -> [String] {
        switch location {
        case .sqlite(let directory):
            return try SQLiteStore.migrate(path: try databasePath(creating: directory), now: now)
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
            throw AppError(
                """
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

    /// The database of the state directory `stateDirectory`, which is created if needed.
    private static func databasePath(creating stateDirectory: String) throws -> String {
        try createStateDirectory(stateDirectory)
        return Settings.databasePath(stateDirectory: stateDirectory)
    }

    static func createStateDirectory(_ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
    }

    /// What each commit of the writer reports goes to the store metrics and the failure log.
    private static func commitObserver(metrics: MetricsRegistry, logger: Logger) -> @Sendable (StoreCommit) -> Void {
        let commitDuration = metrics.histogram(
            "insightd_store_commit_duration_seconds",
            help: "Duration of one group commit (fsync included).", buckets: Buckets.commitDuration
        )
        .labels()
        let batchSize = metrics.histogram(
            "insightd_store_commit_batch_size", help: "Writes committed together.",
            buckets: Buckets.powersOfTwo
        ).labels()
        let writeFailures = metrics.counter(
            "insightd_store_write_failures_total",
            help: "Writes the store could not commit (answered 503)."
        ).labels()
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
