import Foundation
import InsightDomain
import PostgresClient

/// The store of record on PostgreSQL (the multi-instance mode, `INSIGHTD_DATABASE_URL`): every
/// store port over one server that any number of instances share.
///
/// `open` applies pending migrations (under `PostgresMigrator`'s advisory lock, so that
/// instances starting together apply each once) and makes the ports: writes through one
/// pipelined writer (`PostgresWriter`, its own thread and connection), reads through a small
/// pool of connections. Nothing is cached: each instance reads what the database holds now.
/// While the server is unreachable every operation fails at once with
/// `StoreFailure.unavailable` (reads throw it), and the connections come back by themselves
/// once it answers again, without a new store.
public final class PostgresStore: StoreOfRecord {
    public let ledger: PostgresLedger
    public let credentials: PostgresCredentialDirectory
    /// Caller administration, reporting counts, the velocity history and `everyCaller()`.
    public let administration: PostgresAdministration
    public let authorizations: PostgresAuthorizationStore
    public let retention: PostgresRetention
    public let erasure: PostgresSubjectErasure
    /// Which instance runs the periodic jobs.
    public let leadership: PostgresJobLeadership
    /// The hash key ids the store has seen.
    public let hashKeyRegistry: PostgresHashKeyRegistry
    /// Every instance's chain of signed receipt heads.
    public let receiptLog: PostgresReceiptLog
    /// Each tenant's intervention catalogue, shared by the cluster's instances.
    public let interventions: PostgresInterventionCatalog
    let writer: PostgresWriter
    private let reads: PostgresReadPool

    /// Connects, applies pending migrations and makes the ports; returns the store and the
    /// names of the migrations applied now. `observer` sees every commit of the writer (as
    /// `GroupCommitWriter`'s); `receipts` signs the heads of the answers this instance commits
    /// (nil: the store takes no evaluation). Throws when the server cannot be reached or a
    /// migration fails.
    public static func open(
        settings: PostgresSettings, now: Milliseconds, receipts: ReceiptIssuer? = nil,
        observer: (@Sendable (PostgresWriter.Commit) -> Void)? = nil
    ) throws
        -> (store: PostgresStore, applied: [String])
    {
        let applied = try migrate(settings: settings, now: now)
        return (PostgresStore(settings: settings, receipts: receipts, observer: observer), applied)
    }

    init(settings: PostgresSettings, receipts: ReceiptIssuer?, observer: (@Sendable (PostgresWriter.Commit) -> Void)?) {
        writer = PostgresWriter(settings: settings, receipts: receipts, observer: observer)
        reads = PostgresReadPool(settings: settings)
        ledger = PostgresLedger(writer: writer, reads: reads)
        credentials = PostgresCredentialDirectory(reads: reads)
        administration = PostgresAdministration(reads: reads, writer: writer)
        authorizations = PostgresAuthorizationStore(reads: reads, writer: writer)
        retention = PostgresRetention(writer: writer)
        erasure = PostgresSubjectErasure(writer: writer, settings: settings)
        leadership = PostgresJobLeadership(settings: settings)
        hashKeyRegistry = PostgresHashKeyRegistry(reads: reads)
        receiptLog = PostgresReceiptLog(reads: reads)
        interventions = PostgresInterventionCatalog(reads: reads, writer: writer)
    }

    /// The ports, for the daemon's use cases and jobs.
    public var ports: StorePorts {
        StorePorts(
            ledger: ledger, credentials: credentials, administration: administration, decisions: administration,
            authorizations: authorizations, retention: retention, history: administration, erasure: erasure,
            performance: administration, hashKeyRegistry: hashKeyRegistry, receiptLog: receiptLog,
            leadership: leadership, store: self, interventions: interventions)
    }

    /// Starts taking writes.
    public func start() { writer.start() }

    /// Commits what is queued, gives up the lead and closes the connections.
    public func stop() {
        writer.stop()
        leadership.release()
        reads.close()
    }

    /// Writes waiting for the writer now.
    public var writeQueueDepth: Int { writer.depth }

    /// Most writes the writer queues before refusing (`StoreFailure.overloaded`).
    public var writeQueueCapacity: Int { writer.capacity }

    /// True when the server answers a query now (for `/readyz`).
    public var isReachable: Bool { reads.isReachable }

    /// Why the last attempt to connect failed (nil once one succeeded): no host of the URL
    /// answering, or none taking writes (`session is read-only`). Never the password.
    public var unreachableReason: String? { reads.unreachableReason }

    // MARK: - Operator tools (insightctl)

    /// Applies pending migrations under the migrator's advisory lock; returns their names.
    public static func migrate(settings: PostgresSettings, now: Milliseconds) throws -> [String] {
        try PostgresMigrator(migrations: PostgresMigrator.bundled()).migrate(try settings.connect(), now: now)
    }

    /// The registration of callers and keys on a connection of its own, after applying pending
    /// migrations (an empty database is migrated by whichever of insightctl and insightd comes first).
    public static func registration(settings: PostgresSettings, now: Milliseconds) throws -> PostgresCallerRegistry {
        let connection = try settings.connect()
        try PostgresMigrator(migrations: PostgresMigrator.bundled()).migrate(connection, now: now)
        return PostgresCallerRegistry(connection)
    }

    /// The captured training vectors on a connection of its own, after applying pending
    /// migrations (`insightctl training export`).
    public static func trainingVectors(settings: PostgresSettings, now: Milliseconds) throws -> PostgresTrainingVectors {
        let connection = try settings.connect()
        try PostgresMigrator(migrations: PostgresMigrator.bundled()).migrate(connection, now: now)
        return PostgresTrainingVectors(connection)
    }

    /// Deletes everything older than `cutoff`, one batch per transaction (`insightctl purge`,
    /// beside or without running instances).
    public static func purge(settings: PostgresSettings, olderThan cutoff: Milliseconds, now: Milliseconds) throws
        -> RetentionReport
    {
        let connection = try settings.connect()
        try PostgresMigrator(migrations: PostgresMigrator.bundled()).migrate(connection, now: now)
        let statement = PostgresRetention.statement(cutoff: cutoff, trainingCutoff: cutoff)
        let prepared = try connection.prepare(statement.name, statement.sql)
        var total = RetentionReport()
        while true {
            let batch = try PostgresRetention.decode([try connection.query(prepared, statement.parameters)])
            if batch.isEmpty { return total }
            total.add(batch)
        }
    }
}

extension PostgresAdministration: CallerListing {}
