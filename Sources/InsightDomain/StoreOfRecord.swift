/// A store of record as the daemon starts, watches and stops it, whichever its engine
/// (`SQLiteStore` in InsightStorage, `PostgresStore` in InsightPostgres).
public protocol StoreOfRecord: Sendable {
    /// Starts taking writes (the writer's thread, and whatever runs beside it).
    func start()
    /// Commits what is queued, then closes the store. Writes after it fail `unavailable`.
    func stop()
    /// True while the store answers (for `/readyz`; an embedded store always does).
    var isReachable: Bool { get }
    /// Why the store did not answer last, for the log (nil when it did, or cannot fail so).
    var unreachableReason: String? { get }
    /// Writes waiting for the writer now.
    var writeQueueDepth: Int { get }
}

/// Every caller of every tenant at once (the daemon's reporting gauges), beside the per-tenant
/// reads of `CallerAdministration`.
public protocol CallerListing: Sendable {
    func everyCaller() throws -> [Caller]
}

/// The ports of one opened store of record, as the daemon wires them into its use cases and
/// jobs, and the store under them. Each engine makes it in one place (`SQLiteStore.ports`,
/// `PostgresStore.ports`), so the composition root never asks which engine it has.
public struct StorePorts: Sendable {
    public var ledger: any EvaluationLedger
    public var credentials: any CredentialDirectory
    /// Caller administration, reporting counts, the velocity history and every caller at once.
    public var administration: any CallerAdministration & ReportingStatsSource & VelocityHistory & CallerListing
    /// Decisions read back and counted against consumption reports (the admin view).
    public var decisions: any DecisionReporting
    public var authorizations: any AuthorizationStore
    public var retention: any RetentionPurge
    /// A subject's evaluations and their erasure (docs/api.md, "The person's view: transparency and erasure").
    public var history: any SubjectHistory
    public var erasure: any SubjectErasure
    /// Model performance counts (docs/api.md, `GET /admin/v1/model-performance`).
    public var performance: any ModelPerformanceSource
    /// The hash key ids the store has seen.
    public var hashKeyRegistry: any HashKeyRegistry
    /// Every instance's chain of signed receipt heads.
    public var receiptLog: any ReceiptLog
    /// Which instance runs the periodic jobs (always this one on an embedded store).
    public var leadership: any JobLeadership
    /// The store itself: its writer's start and stop, whether it answers.
    public var store: any StoreOfRecord
    /// Each tenant's intervention catalogue (docs/api.md "Intervention catalogue").
    public var interventions: any InterventionCatalog

    public init(
        ledger: any EvaluationLedger, credentials: any CredentialDirectory,
        administration: any CallerAdministration & ReportingStatsSource & VelocityHistory & CallerListing,
        decisions: any DecisionReporting, authorizations: any AuthorizationStore, retention: any RetentionPurge,
        history: any SubjectHistory, erasure: any SubjectErasure, performance: any ModelPerformanceSource,
        hashKeyRegistry: any HashKeyRegistry, receiptLog: any ReceiptLog, leadership: any JobLeadership,
        store: any StoreOfRecord, interventions: any InterventionCatalog
    ) {
        self.ledger = ledger
        self.credentials = credentials
        self.administration = administration
        self.decisions = decisions
        self.authorizations = authorizations
        self.retention = retention
        self.history = history
        self.erasure = erasure
        self.performance = performance
        self.hashKeyRegistry = hashKeyRegistry
        self.receiptLog = receiptLog
        self.leadership = leadership
        self.store = store
        self.interventions = interventions
    }
}
