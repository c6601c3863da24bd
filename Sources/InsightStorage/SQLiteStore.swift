import InsightDomain
import SQLiteClient

/// Where the embedded store's database is, and how its writer and subject index pace themselves.
public struct SQLiteSettings: Sendable {
    /// The database file (`INSIGHTD_STATE_DIR/insightd.db`); the subject index's side file lies beside it.
    public var path: String
    /// Most writes waiting for the writer before new ones are refused (`StoreFailure.overloaded`).
    public var writeQueueCapacity = 10_000
    /// Most writes committed together in one transaction.
    public var commitBatch = 256
    /// How the subject indexer paces itself.
    public var subjectIndexPace = SQLiteSubjectIndex.Pace()

    public init(path: String) { self.path = path }
}

/// The store of record in one SQLite file (the embedded mode, one instance): every store port
/// over one database.
///
/// `open` applies pending migrations and makes the ports: writes through the one group-commit
/// writer (`GroupCommitWriter`, its own thread and read-write connection), reads through
/// connections of their own, subjects' histories through the subject index in its side file
/// (`SQLiteSubjectIndex`, its own thread). `start` starts both threads; `stop` commits what is
/// queued and stops them.
public final class SQLiteStore: StoreOfRecord {
    public let ledger: SQLiteLedger
    public let credentials: SQLiteCredentialDirectory
    /// Caller administration, reporting counts, the velocity history, decisions, model
    /// performance and `everyCaller()`.
    public let administration: SQLiteAdministration
    public let authorizations: SQLiteAuthorizationStore
    public let retention: SQLiteRetention
    /// Which evaluations carried which subject hash: a subject's history, and the erasure's way to the rows.
    public let subjects: SQLiteSubjectIndex
    public let erasure: SQLiteSubjectErasure
    /// Always this instance: an embedded store has one.
    public let leadership = SQLiteJobLeadership()
    /// The hash key ids the store has seen.
    public let hashKeyRegistry: SQLiteHashKeyRegistry
    /// Every instance's chain of signed receipt heads.
    public let receiptLog: SQLiteReceiptLog
    /// Each tenant's intervention catalogue.
    public let interventions: SQLiteInterventionCatalog
    /// The one writer of the database (a benchmark of the ledger alone starts only it).
    public let writer: GroupCommitWriter

    /// Opens the database (creating it if needed), applies pending migrations and makes the
    /// ports; returns the store and the names of the migrations applied now. `observer` sees
    /// every commit of the writer; `receipts` signs the heads of the answers this instance
    /// commits (nil: the store takes no evaluation), its chain resumed from the database here.
    public static func open(
        settings: SQLiteSettings, now: Milliseconds, receipts: ReceiptIssuer? = nil,
        observer: (@Sendable (GroupCommitWriter.Commit) -> Void)? = nil
    ) throws
        -> (store: SQLiteStore, applied: [String])
    {
        let (db, applied) = try Database.openMigrated(path: settings.path, now: now, cacheKiB: Database.writerCacheKiB)
        if let receipts { receipts.resume(after: try SQLiteReceiptLog.tips(of: receipts.instance, in: db)) }
        let writer = GroupCommitWriter(
            connection: db, capacity: settings.writeQueueCapacity, maxBatch: settings.commitBatch,
            receipts: receipts, observer: observer)
        return (try SQLiteStore(settings: settings, writer: writer), applied)
    }

    private init(settings: SQLiteSettings, writer: GroupCommitWriter) throws {
        let path = settings.path
        self.writer = writer
        receiptLog = try SQLiteReceiptLog(path: path)
        administration = try SQLiteAdministration(path: path, writer: writer)
        subjects = try SQLiteSubjectIndex(databasePath: path, pace: settings.subjectIndexPace)
        ledger = try SQLiteLedger(writer: writer)
        credentials = try SQLiteCredentialDirectory(path: path)
        authorizations = try SQLiteAuthorizationStore(path: path, writer: writer)
        retention = SQLiteRetention(writer: writer, index: subjects)
        erasure = SQLiteSubjectErasure(writer: writer, index: subjects)
        hashKeyRegistry = SQLiteHashKeyRegistry(path: path)
        interventions = try SQLiteInterventionCatalog(path: path, writer: writer)
    }

    /// The ports, for the daemon's use cases and jobs.
    public var ports: StorePorts {
        StorePorts(
            ledger: ledger, credentials: credentials, administration: administration, decisions: administration,
            authorizations: authorizations, retention: retention, history: subjects, erasure: erasure,
            performance: administration, hashKeyRegistry: hashKeyRegistry, receiptLog: receiptLog,
            leadership: leadership, store: self, interventions: interventions)
    }

    /// Starts the writer, then the subject indexer.
    public func start() {
        writer.start()
        subjects.start()
    }

    /// Commits what is queued and stops the writer, then the subject indexer.
    public func stop() {
        writer.stop()
        subjects.stop()
    }

    /// Always: the database is a local file.
    public var isReachable: Bool { true }

    public var unreachableReason: String? { nil }

    public var writeQueueDepth: Int { writer.depth }

    // MARK: - Operator tools (insightctl)

    /// Applies pending migrations (creating the database if needed); returns their names.
    public static func migrate(path: String, now: Milliseconds) throws -> [String] {
        try Database.openMigrated(path: path, now: now).1
    }

    /// The registration of callers and keys on a connection of its own, after applying pending migrations.
    public static func registration(path: String, now: Milliseconds) throws -> CallerRegistry {
        CallerRegistry(try Database.openMigrated(path: path, now: now).0)
    }

    /// The captured training vectors on a connection of its own, after applying pending migrations.
    public static func trainingVectors(path: String, now: Milliseconds) throws -> SQLiteTrainingVectors {
        SQLiteTrainingVectors(try Database.openMigrated(path: path, now: now).0)
    }

    /// The stored receipt heads, after applying pending migrations.
    public static func receiptLog(path: String, now: Milliseconds) throws -> SQLiteReceiptLog {
        _ = try Database.openMigrated(path: path, now: now)
        return try SQLiteReceiptLog(path: path)
    }

    /// Deletes everything older than `cutoff` at once, one batch per transaction, after applying
    /// pending migrations (beside or without a daemon).
    public static func purge(path: String, olderThan cutoff: Milliseconds, now: Milliseconds) throws -> RetentionReport {
        try Retention(try Database.openMigrated(path: path, now: now).0).purge(olderThan: cutoff)
    }
}

extension SQLiteAdministration: CallerListing {}
