/// What the API needs from storage. Writes complete asynchronously, after their transaction
/// is durably committed, so that an answer is never sent for data that could still be lost.

/// Why a store operation could not be carried out.
public enum StoreFailure: Error, Sendable, Equatable {
    /// The write queue is full: the caller should retry after a short delay.
    case overloaded
    /// The store is stopping or failed; the message is for logs, never for callers.
    case unavailable(String)
}

/// What one commit of a store's writer did, for the operator's metrics and log (both backends'
/// writers report it the same way).
public struct StoreCommit: Sendable {
    /// Jobs in the batch.
    public var size: Int
    /// The commit's duration in seconds, from the start of the batch to its durable commit.
    public var seconds: Double
    /// Jobs that failed.
    public var failed: Int
    /// The first failure's error, as text: for the operator's log, never for callers.
    public var firstError: String?

    public init(size: Int, seconds: Double, failed: Int, firstError: String?) {
        self.size = size
        self.seconds = seconds
        self.failed = failed
        self.firstError = firstError
    }
}

/// Durable writes of evaluations, consumption reports and labels.
public protocol EvaluationLedger: Sendable {
    /// Stores an evaluation whose answer's bytes are `answer`; the answer is a leaf of the tree
    /// its batch's signed head commits to. `completion` runs after the commit (on a store
    /// thread) with the answer's receipt.
    func record(
        _ evaluation: EvaluationRecord, answer: [UInt8],
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void)

    /// The live retry entry whose key is one of `keys` (one request's key under each hash key of
    /// its tenant), or nil: none, or only one that expired by `now`; with the signed head and
    /// leaves of its first answer's batch (`RetryEntry.firstHead`), read with it.
    func retryEntry(keys: [[UInt8]], now: Milliseconds) throws -> RetryEntry?

    /// Makes a receipt for an answer given again whose entry names no head (stored before
    /// migration 0023): its leaf joins the tree of the writer's next batch, whose signed head is
    /// stored as any other; nothing else is written.
    func reissue(
        answer: [UInt8], tenant: String, environment: Environment,
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void)

    /// Applies a consumption report atomically (lookup, checks and insert in one transaction).
    func report(
        _ report: ConsumptionReport,
        completion: @escaping @Sendable (Result<ConsumptionResult, StoreFailure>) -> Void)

    /// Applies a label submission atomically, honouring its idempotency key.
    func submit(
        _ submission: LabelSubmission,
        completion: @escaping @Sendable (Result<LabelSubmissionResult, StoreFailure>) -> Void)
}

/// Lookup of callers and their keys, for authentication.
public protocol CredentialDirectory: Sendable {
    /// The key with id `keyId` and its caller, or nil.
    func credential(keyId: String) throws -> (key: StoredKey, caller: Caller)?
}

/// Administration of callers by the running daemon (admin API). Every operation is scoped to
/// one tenant: a caller of another tenant does not exist for it.
public protocol CallerAdministration: Sendable {
    /// Every caller of `tenant`, oldest first.
    func callers(tenant: String) throws -> [Caller]
    /// One caller of `tenant`, or nil.
    func caller(_ callerId: String, tenant: String) throws -> Caller?
    /// The ceiling the operator set on `tenant`'s quotas (`TenantCeiling()` when none).
    func ceiling(tenant: String) throws -> TenantCeiling
    /// Changes rate, burst and/or training capture (nil leaves a setting as it is); completes with
    /// the updated caller, or nil if `tenant` has none with this id. A rate or burst above the
    /// tenant's ceiling as it stands at the commit is stored as the ceiling (the use case
    /// refuses it before; this holds the line against a ceiling lowered meanwhile).
    func updateCaller(
        callerId: String, tenant: String, rate: Double?, burst: Int?, trainingCapture: Bool?,
        completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void)
    /// Records that the caller's reporting penalty was reset at `time`; completes with false
    /// if `tenant` has no such caller.
    func resetPenalty(
        callerId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<Bool, StoreFailure>) -> Void)
    /// The keys of a caller of `tenant`, oldest first, or nil if `tenant` has no such caller.
    func keys(callerId: String, tenant: String) throws -> [StoredKey]?
    /// Revokes one key of a caller of `tenant` at `time`; completes with the key as it is now (a
    /// key revoked before keeps its time), or nil if `tenant` has no such caller with that key.
    func revokeKey(
        callerId: String, keyId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<StoredKey?, StoreFailure>) -> Void)
}

extension CallerAdministration {
    /// Changes rate and/or burst (`updateCaller` without training capture).
    public func updateQuota(
        callerId: String, tenant: String, rate: Double?, burst: Int?,
        completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void
    ) {
        updateCaller(callerId: callerId, tenant: tenant, rate: rate, burst: burst, trainingCapture: nil, completion: completion)
    }
}

/// Registration of callers and their keys by an operator (`insightctl`, test set-up). Calls are
/// synchronous and made from one thread; a caller's secret exists only in the `APIKey` returned.
public protocol CallerRegistration {
    /// Creates a caller of `tenant` and its first key. Throws when the tenant name, the roles
    /// (none), rate (not positive and finite), burst (below 1) or the trimmed name (empty or over
    /// 100 bytes) is invalid, or when `callerId` is taken.
    func create(
        name: String, tenant: String, environment: Environment, roles: Set<Role>,
        rate: Double, burst: Int, now: Milliseconds, callerId: String
    ) throws -> (Caller, APIKey)
    /// Issues another key for an existing caller (rotation); throws if there is no such caller.
    func issueKey(callerId: String, now: Milliseconds) throws -> APIKey
    /// Revokes a key; throws if there is no such key or it is already revoked.
    func revokeKey(keyId: String, now: Milliseconds) throws
    /// Every caller (of `tenant` when given), oldest first, then by id.
    func list(tenant: String?) throws -> [Caller]
    /// The caller with `callerId` (only if it belongs to `tenant`, when given), or nil.
    func caller(_ callerId: String, tenant: String?) throws -> Caller?
    /// A caller's keys, oldest first (ids, hashes and dates: secrets are never stored).
    func keys(callerId: String) throws -> [StoredKey]
    /// Every tenant that has callers, by name, with its callers per environment.
    func tenants() throws -> [(name: String, production: Int, sandbox: Int)]
    /// Turns training capture on or off for a caller (docs/privacy.md, "Training capture");
    /// returns the updated caller. Throws if there is no such caller.
    func setTrainingCapture(callerId: String, _ on: Bool) throws -> Caller
    /// Changes a caller's rate and/or burst (nil leaves one as it is); a value above its tenant's
    /// ceiling is stored as the ceiling. Returns the updated caller; throws if there is none.
    func setQuota(callerId: String, rate: Double?, burst: Int?) throws -> Caller
    /// The ceiling the operator set on `tenant`'s quotas (`TenantCeiling()` when none).
    func ceiling(tenant: String) throws -> TenantCeiling
    /// Sets `tenant`'s ceiling (a nil member: none on it) and, in the same transaction, lowers
    /// each of its callers above it to it; returns how many callers were lowered. Throws when
    /// the tenant name is invalid, a rate is not positive and finite, or a burst is below 1.
    func setCeiling(_ ceiling: TenantCeiling, tenant: String) throws -> Int
}

/// What one retention pass deleted.
public struct RetentionReport: Sendable, Equatable {
    public var evaluations = 0
    public var labels = 0
    public var labelSubmissions = 0
    public var authorizations = 0
    /// Captured training vectors (docs/privacy.md, "Training capture").
    public var trainingVectors = 0
    /// Signed receipt heads with their leaf hashes, oldest first (docs/api.md, "Receipts").
    public var receiptHeads = 0
    public var isEmpty: Bool {
        evaluations == 0 && labels == 0 && labelSubmissions == 0 && authorizations == 0 && trainingVectors == 0
            && receiptHeads == 0
    }

    public init(
        evaluations: Int = 0, labels: Int = 0, labelSubmissions: Int = 0, authorizations: Int = 0,
        trainingVectors: Int = 0, receiptHeads: Int = 0
    ) {
        self.evaluations = evaluations
        self.labels = labels
        self.labelSubmissions = labelSubmissions
        self.authorizations = authorizations
        self.trainingVectors = trainingVectors
        self.receiptHeads = receiptHeads
    }

    public mutating func add(_ other: RetentionReport) {
        evaluations += other.evaluations
        labels += other.labels
        labelSubmissions += other.labelSubmissions
        authorizations += other.authorizations
        trainingVectors += other.trainingVectors
        receiptHeads += other.receiptHeads
    }
}

/// Deletion of what is older than the retention period (docs/privacy.md), one bounded batch at a
/// time so that a large purge never holds the store for long.
public protocol RetentionPurge: Sendable {
    /// Deletes at most one batch of each kind older than `cutoff`: evaluations created before it
    /// (with their insights and consumption report), labels and label submissions received
    /// before it, authorizations last renewed before it, captured training vectors created
    /// before `trainingCutoff` or whose evaluation goes now, receipt heads made before it (a
    /// chain then starts at its oldest kept head). Completes with what it deleted; call
    /// again until the report is empty.
    func purgeBatch(
        olderThan cutoff: Milliseconds, trainingVectorsOlderThan trainingCutoff: Milliseconds,
        completion: @escaping @Sendable (Result<RetentionReport, StoreFailure>) -> Void)
}

extension RetentionPurge {
    /// `purgeBatch` with one cutoff for everything, training vectors included.
    public func purgeBatch(
        olderThan cutoff: Milliseconds,
        completion: @escaping @Sendable (Result<RetentionReport, StoreFailure>) -> Void
    ) {
        purgeBatch(olderThan: cutoff, trainingVectorsOlderThan: cutoff, completion: completion)
    }
}

/// The stored evaluations as velocity tracking records them, to rebuild its state at start, read
/// one bounded batch at a time so that a replay never holds more than a batch beside the tracker.
///
/// A replay runs beside live traffic: it reads what was stored up to `velocityHistoryEnd()`,
/// taken before the first live evaluation, and everything stored after that reaches the tracker
/// live; the store's sequence (the order evaluations were stored), not their clock times,
/// separates the two, so that none is counted twice or missed whatever the clock did.
public protocol VelocityHistory: Sendable {
    /// Where the stored evaluations end now.
    func velocityHistoryEnd() throws -> VelocityHistoryEnd

    /// At most `limit` evaluations stored up to `end` that come after `cursor`, ordered by
    /// (creation time, sequence). A batch may hold fewer than `limit`, even none, before the
    /// end; `next` is nil once nothing is left, and otherwise where the following batch starts.
    func velocityEvents(
        after cursor: VelocityHistoryCursor, through end: VelocityHistoryEnd,
        limit: Int
    ) throws -> VelocityHistoryBatch
}

/// A position in the stored evaluations ordered by (creation time, the store's sequence): a
/// batch continues with the evaluations after it.
public struct VelocityHistoryCursor: Sendable, Hashable {
    /// Creation time of the last evaluation read (or where reading starts).
    public var time: Milliseconds
    /// The store's sequence of that evaluation (SQLite: its rowid), which orders evaluations of
    /// the same millisecond; `Int64.min` is before all of them.
    public var sequence: Int64

    public init(time: Milliseconds, sequence: Int64) {
        self.time = time
        self.sequence = sequence
    }

    /// Before the first evaluation created at or after `time`.
    public static func from(_ time: Milliseconds) -> VelocityHistoryCursor {
        VelocityHistoryCursor(time: time, sequence: .min)
    }
}

/// What was stored when a replay began: the evaluations whose sequence is at most `sequence`,
/// all created before `time`.
public struct VelocityHistoryEnd: Sendable, Hashable {
    /// The store's last sequence then (evaluations stored later have a higher one).
    public var sequence: Int64
    /// After the newest creation time then (exclusive).
    public var time: Milliseconds

    public init(sequence: Int64, time: Milliseconds) {
        self.sequence = sequence
        self.time = time
    }
}

/// One batch of a velocity replay.
public struct VelocityHistoryBatch: Sendable, Equatable {
    public var events: [VelocityEvent]
    /// Where the next batch starts; nil when nothing is left.
    public var next: VelocityHistoryCursor?

    public init(events: [VelocityEvent], next: VelocityHistoryCursor?) {
        self.events = events
        self.next = next
    }
}

extension VelocityHistory {
    /// Every evaluation stored now that was created at or after `since`, oldest first, read
    /// batch by batch (for tests and tools; the daemon's replay records each batch as it comes).
    public func velocityEvents(since: Milliseconds, batch: Int = 4096) throws -> [VelocityEvent] {
        let end = try velocityHistoryEnd()
        var events: [VelocityEvent] = []
        var cursor: VelocityHistoryCursor? = .from(since)
        while let position = cursor {
            let next = try velocityEvents(after: position, through: end, limit: batch)
            events += next.events
            cursor = next.next
        }
        return events
    }
}

/// The hash key ids the store has seen (`KeyringAgreement`).
public protocol HashKeyRegistry: Sendable {
    /// In one transaction, serialised with every other instance's: reads the registered key
    /// ids, asks `decide` which to add (it throws to refuse) and adds them at `now`.
    func reconcile(now: Milliseconds, _ decide: (Set<String>) throws -> [String]) throws
}

/// Which instance runs the periodic jobs (retention, the reporting recount) when several share
/// one store: at most one leads at a time.
public protocol JobLeadership: Sendable {
    /// True when this instance leads now: it took the lead, or still holds it. The lead is held
    /// until `release()` or until the instance loses its connection to the store (another
    /// instance may then take it); call before each run of a job.
    func tryLead() -> Bool
    /// Gives the lead up (at shutdown), so that another instance takes it at once.
    func release()
}

/// A subject to erase in one tenant: every hash it has, per kind (one per key id of the
/// tenant's keyring; a kind with no hashes is left alone).
public struct ErasedSubject: Sendable, Equatable {
    public var tenant: String
    /// The environment erased (an admin key erases in its own, `Caller.administers`); nil: both.
    public var environment: Environment?
    public var account: [[UInt8]]
    public var device: [[UInt8]]
    public var counterparty: [[UInt8]]

    public init(
        tenant: String, environment: Environment? = nil, account: [[UInt8]] = [], device: [[UInt8]] = [],
        counterparty: [[UInt8]] = []
    ) {
        self.tenant = tenant
        self.environment = environment
        self.account = account
        self.device = device
        self.counterparty = counterparty
    }

    /// The environments erased.
    public var environments: [Environment] { environment.map { [$0] } ?? Environment.allCases }

    /// The environment as SQL parameters bind it: its name, or "" for both (`? = '' OR environment = ?`).
    public var environmentParameter: String { environment?.rawValue ?? "" }

    /// The hashes of `kind`.
    public func hashes(_ kind: IdentifierKind) -> [[UInt8]] {
        switch kind {
        case .account: return account
        case .device: return device
        case .counterparty: return counterparty
        }
    }
}

/// What one erasure unlinked: rows, per table.
public struct SubjectErasureReport: Sendable, Equatable {
    /// Evaluations that lost at least one of the subject's hashes (the rows stay).
    public var evaluations = 0
    /// Subject authorizations (opt-outs or authorizations) deleted.
    public var authorizations = 0
    /// Captured training vectors of those evaluations, deleted.
    public var trainingVectors = 0
    public var isEmpty: Bool { evaluations == 0 && authorizations == 0 && trainingVectors == 0 }

    public init(evaluations: Int = 0, authorizations: Int = 0, trainingVectors: Int = 0) {
        self.evaluations = evaluations
        self.authorizations = authorizations
        self.trainingVectors = trainingVectors
    }
}

/// Erasure of a subject from the store (docs/privacy.md "Erasure"), in one
/// transaction through the writer: the evaluations of the tenant's callers keep their rows,
/// insights, consumption reports and labels (model performance counts do not change) but lose
/// the subject's hashes (set to NULL); the training vectors captured of those evaluations and
/// the tenant's subject authorizations under those hashes are deleted. Nothing else stores a
/// subject hash. Idempotent: a second erasure answers zeros.
/// The completion runs after the commit and after what the backend does so that the erased
/// bytes leave its files (SQLite: overwritten in place and the write-ahead log checkpointed;
/// PostgreSQL: the touched tables vacuumed); a failure of either is a `StoreFailure`, and
/// erasing again completes it.
public protocol SubjectErasure: Sendable {
    func erase(
        _ subject: ErasedSubject,
        completion: @escaping @Sendable (Result<SubjectErasureReport, StoreFailure>) -> Void)
}

/// The evaluations that carried one subject (docs/api.md "The person's view"), newest first, one
/// page at a time. The caller hashes the identifier under every key of the keyring and passes
/// the hashes: nothing raw reaches the store, and a rotated key still finds the rows it hashed.
public protocol SubjectHistory: Sendable {
    /// The page of `query`: at most `query.limit` evaluations of callers of `query.tenant` in
    /// `query.environment` whose `query.kind` hash is one of `query.hashes`, ordered by
    /// (creation time, the store's sequence) descending, after `query.after` when given.
    func subjectHistory(_ query: SubjectHistoryQuery) throws -> SubjectHistoryPage
}

/// What `SubjectHistory` is asked: one subject's hashes (one per hash key), where and how much.
public struct SubjectHistoryQuery: Sendable, Equatable {
    /// The entries a page may hold.
    public static let limits = 1...500

    /// Why a query cannot be made.
    public enum Invalid: Error, Sendable, Equatable {
        /// `limit` is outside `limits`.
        case limit(Int)
    }

    public let kind: IdentifierKind
    public let hashes: [[UInt8]]
    public let tenant: String
    public let environment: Environment
    public let limit: Int
    /// Where the previous page ended (its `next`); nil for the newest.
    public let after: SubjectHistoryCursor?

    /// Throws `Invalid.limit` unless `limit` is within `limits`. No hash at all is a valid
    /// query whose page is empty.
    public init(
        kind: IdentifierKind, hashes: [[UInt8]], tenant: String, environment: Environment, limit: Int,
        after: SubjectHistoryCursor? = nil
    ) throws {
        guard Self.limits.contains(limit) else { throw Invalid.limit(limit) }
        self.kind = kind
        self.hashes = hashes
        self.tenant = tenant
        self.environment = environment
        self.limit = limit
        self.after = after
    }
}

/// A position in one subject's history, newest first: the next page holds the evaluations
/// before it. The API hands it out opaquely.
public struct SubjectHistoryCursor: Sendable, Hashable {
    /// Creation time of the last evaluation of the page.
    public var time: Milliseconds
    /// That evaluation's sequence in the store (SQLite: its rowid; PostgreSQL: its number),
    /// which orders the evaluations of one millisecond.
    public var sequence: Int64

    public init(time: Milliseconds, sequence: Int64) {
        self.time = time
        self.sequence = sequence
    }
}

/// One page of a subject's history.
public struct SubjectHistoryPage: Sendable, Equatable {
    public var entries: [SubjectHistoryEntry]
    /// Where the next page starts; nil when no evaluation is left.
    public var next: SubjectHistoryCursor?

    public init(entries: [SubjectHistoryEntry], next: SubjectHistoryCursor?) {
        self.entries = entries
        self.next = next
    }
}

/// One evaluation that carried the subject, as the person may see it.
public struct SubjectHistoryEntry: Sendable, Equatable {
    public var eventId: String
    public var createdAt: Milliseconds
    public var category: OperationCategory
    public var callerId: String
    /// The evaluating caller's name; nil if its caller is no longer registered.
    public var callerName: String?
    /// In position order.
    public var insights: [SubjectHistoryInsight]
    /// What the decision policy answered; nil for an evaluation stored before decisions existed.
    public var decision: DecisionAction?

    public init(
        eventId: String, createdAt: Milliseconds, category: OperationCategory, callerId: String,
        callerName: String?, insights: [SubjectHistoryInsight], decision: DecisionAction? = nil
    ) {
        self.eventId = eventId
        self.createdAt = createdAt
        self.category = category
        self.callerId = callerId
        self.callerName = callerName
        self.insights = insights
        self.decision = decision
    }
}

/// One insight of a `SubjectHistoryEntry`.
public struct SubjectHistoryInsight: Sendable, Equatable {
    /// What the insight answered: a value, or an insight-level error code.
    public enum Outcome: Sendable, Equatable {
        case value(InsightValue)
        case error(InsightErrorCode)
    }

    public var type: String
    public var modelVersion: String?
    public var outcome: Outcome

    public init(type: String, modelVersion: String?, outcome: Outcome) {
        self.type = type
        self.modelVersion = modelVersion
        self.outcome = outcome
    }

    /// The outcome of a stored row: its value, else its error code; nil if the row holds neither
    /// that this version knows.
    public static func outcome(value: String?, errorCode: String?) -> Outcome? {
        if let value, let known = InsightValue(rawValue: value) { return .value(known) }
        if let errorCode, let known = InsightErrorCode(rawValue: errorCode) { return .error(known) }
        return nil
    }
}
