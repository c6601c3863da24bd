import Crypto

/// A registered caller: a calling service, a fraud-operations server or an administrator.
public struct Caller: Sendable, Equatable {
    public var callerId: String
    public var name: String
    /// The tenant the caller belongs to (`Tenant`); it scopes what the caller can see and affect.
    public var tenant: String
    public var environment: Environment
    public var roles: Set<Role>
    /// Sustained evaluations per second allowed (GCRA rate).
    public var rate: Double
    /// Evaluations allowed in a burst above the rate.
    public var burst: Int
    public var createdAt: Milliseconds
    /// Whether the feature vectors of this caller's evaluations are kept for training
    /// (docs/privacy.md "Training capture"); off unless an operator turns it on.
    public var trainingCapture: Bool

    public init(
        callerId: String, name: String, tenant: String = Tenant.defaultName, environment: Environment,
        roles: Set<Role>, rate: Double, burst: Int, createdAt: Milliseconds, trainingCapture: Bool = false
    ) {
        self.callerId = callerId
        self.name = name
        self.tenant = tenant
        self.environment = environment
        self.roles = roles
        self.rate = rate
        self.burst = burst
        self.createdAt = createdAt
        self.trainingCapture = trainingCapture
    }
}

extension Caller {
    /// Whether this caller, an admin, sees and changes `other` (docs/api.md "Admin API"): a
    /// caller of its own tenant and environment. A sandbox admin key administers the sandbox
    /// only, a production one production only; the operator (`insightctl` on the store) both.
    public func administers(_ other: Caller) -> Bool {
        other.tenant == tenant && other.environment == environment
    }
}

/// An API key as stored: only a hash of its secret part.
public struct StoredKey: Sendable, Equatable {
    public var keyId: String
    public var callerId: String
    public var secretHash: [UInt8]
    public var createdAt: Milliseconds
    public var revokedAt: Milliseconds?

    public init(
        keyId: String, callerId: String, secretHash: [UInt8], createdAt: Milliseconds,
        revokedAt: Milliseconds?
    ) {
        self.keyId = keyId
        self.callerId = callerId
        self.secretHash = secretHash
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Keyed hashes of the subject's identifiers. Raw identifiers never get past the API edge.
public struct HashedSubject: Sendable, Equatable {
    public var account: [UInt8]?
    public var device: [UInt8]?
    public var counterparty: [UInt8]?
    /// Which hash key produced these hashes (for rotation).
    public var keyId: String?

    public init(
        account: [UInt8]? = nil, device: [UInt8]? = nil, counterparty: [UInt8]? = nil,
        keyId: String? = nil
    ) {
        self.account = account
        self.device = device
        self.counterparty = counterparty
        self.keyId = keyId
    }
}

/// One insight's result: a value with its reasons, or an insight-level error.
public enum InsightOutcome: Sendable, Equatable {
    case value(InsightValue, reasons: [String])
    case error(InsightErrorCode, detail: String)
}

/// One insight of an evaluation as answered and stored.
public struct InsightRecord: Sendable, Equatable {
    public var insightId: String
    /// The requested type as sent (it may be one this server does not know).
    public var type: String
    public var schemaVersion: Int
    /// The model version that answered, or was asked for.
    public var modelVersion: String?
    /// The newest model version of this type, if the type is known.
    public var newestModelVersion: String?
    public var outcome: InsightOutcome
    /// Which bin of the model's reference distribution (its manifest's `scoreReference`) the
    /// model's score fell in, for drift; nil when the model did not score or has no reference.
    /// Stored, never answered.
    public var scoreBin: Int?

    public init(
        insightId: String, type: String, schemaVersion: Int, modelVersion: String?,
        newestModelVersion: String?, outcome: InsightOutcome, scoreBin: Int? = nil
    ) {
        self.insightId = insightId
        self.type = type
        self.schemaVersion = schemaVersion
        self.modelVersion = modelVersion
        self.newestModelVersion = newestModelVersion
        self.outcome = outcome
        self.scoreBin = scoreBin
    }
}

/// An evaluation as stored. It holds no interaction data and no raw identifier.
public struct EvaluationRecord: Sendable, Equatable {
    /// The most insights a caller may request in one evaluation (the API's limit); the store
    /// keeps them at positions 0 through 3.
    public static let maxServedInsights = 4
    /// The most shadow answers one evaluation keeps; the store keeps them at positions 4 through 7.
    public static let maxShadowInsights = 4

    public var eventId: String
    public var callerId: String
    public var environment: Environment
    public var category: OperationCategory
    public var createdAt: Milliseconds
    public var reportConsumptionBy: Milliseconds
    public var subject: HashedSubject
    public var insights: [InsightRecord]
    /// The answers of the shadow model versions (`INSIGHTD_MODEL_SHADOW`, docs/operations.md
    /// "Shadow versions"), at most `maxShadowInsights`: stored beside `insights` for the
    /// model-performance report, never answered, signed, shown or decided on, and never labelled
    /// themselves.
    public var shadowInsights: [InsightRecord]
    /// The value velocity tracking recorded for this evaluation (the highest coaching value).
    public var trackedValue: InsightValue?
    /// Whether velocity rules raised that value (velocity's own raises are not coaching evidence).
    public var raisedByVelocity: Bool
    /// What the decision policy answered (docs/decisions.md); nil only for evaluations stored
    /// before decisions existed.
    public var decision: Decision?
    /// The model's input kept for training, stored in the evaluation's transaction; nil unless
    /// the caller opted in and the evaluation had interaction features.
    public var trainingVector: TrainingVector?
    /// What a retry of the request is answered from, stored in the evaluation's transaction;
    /// nil when the request had no `requestId`.
    public var retry: RetryEntry?
    /// The capture kit that produced the interaction (`interaction.source`); nil when the caller
    /// named none. The model-performance report and drift split by it.
    public var source: InteractionSource?
    /// The caller's tenant: whose chain of receipt heads the answer joins (docs/api.md,
    /// "Receipts"). Not stored with the evaluation (the caller's row says it).
    public var tenant: String = Tenant.defaultName

    /// The chain's leaf of the evaluation's answer, `answer`.
    public func leaf(of answer: [UInt8]) -> ReceiptLeaf {
        ReceiptLeaf(hash: MerkleTree.leafHash(of: answer), tenant: tenant, environment: environment.rawValue)
    }

    public init(
        eventId: String, callerId: String, environment: Environment,
        category: OperationCategory, createdAt: Milliseconds,
        reportConsumptionBy: Milliseconds, subject: HashedSubject, insights: [InsightRecord],
        trackedValue: InsightValue? = nil, raisedByVelocity: Bool = false, decision: Decision? = nil,
        shadowInsights: [InsightRecord] = [], trainingVector: TrainingVector? = nil, source: InteractionSource? = nil
    ) {
        self.eventId = eventId
        self.source = source
        self.shadowInsights = shadowInsights
        self.callerId = callerId
        self.environment = environment
        self.category = category
        self.createdAt = createdAt
        self.reportConsumptionBy = reportConsumptionBy
        self.subject = subject
        self.insights = insights
        self.trackedValue = trackedValue
        self.raisedByVelocity = raisedByVelocity
        self.decision = decision
        self.trainingVector = trainingVector
    }
}

/// What an evaluation whose request named a `requestId` keeps so that a retry of the request
/// gets the same answer (docs/api.md, "Retries"): only keyed hashes of the requestId and of the
/// request's bytes, and the answer without its `requestId` member, so that nothing the caller
/// chose is stored. At most one entry per key is live (PostgreSQL's unique key; the SQLite
/// writer's check through its in-memory key index): of two requests racing under one key, one
/// evaluation is stored and the other is answered as a retry.
public struct RetryEntry: Sendable, Equatable {
    /// `SubjectHasher.requestKey` under the tenant's active hash key.
    public var key: [UInt8]
    /// `SubjectHasher.requestDigest` of the request's bytes, under the same key.
    public var digest: [UInt8]
    /// The evaluation the entry answers with.
    public var eventId: String
    /// The answer's bytes without the `requestId` member: the answer given is these bytes with
    /// the retry's `requestId` put back, byte for byte the first answer.
    public var answer: [UInt8]
    /// When the entry stops answering (the evaluation's consumption deadline); a request under
    /// the same key after it is a new evaluation.
    public var expiresAt: Milliseconds
    /// The signed head, with its leaves, of the batch that committed the first answer, as the
    /// store reads it back: a retry is answered with the first answer's receipt, made again from
    /// it, and writes nothing. Nil in an entry being stored (its writer names the head), and in
    /// one stored before migration 0023 named it.
    public var firstHead: LoggedHead?

    public init(
        key: [UInt8], digest: [UInt8], eventId: String, answer: [UInt8], expiresAt: Milliseconds,
        firstHead: LoggedHead? = nil
    ) {
        self.key = key
        self.digest = digest
        self.eventId = eventId
        self.answer = answer
        self.expiresAt = expiresAt
        self.firstHead = firstHead
    }
}

/// A consumption report for one evaluation.
public struct ConsumptionReport: Sendable, Equatable {
    public var eventId: String
    public var callerId: String
    public var environment: Environment
    public var status: ConsumptionStatus
    public var insightIdsUsed: [String]
    public var reportedAt: Milliseconds
    /// The reporter's tenant: whose catalogue the intervention's template is looked up in.
    public var tenant: String
    /// What the caller did, when the report says (nil: it does not).
    public var intervention: RecordedIntervention?

    public init(
        eventId: String, callerId: String, environment: Environment,
        status: ConsumptionStatus, insightIdsUsed: [String], reportedAt: Milliseconds,
        tenant: String = Tenant.defaultName, intervention: RecordedIntervention? = nil
    ) {
        self.eventId = eventId
        self.callerId = callerId
        self.environment = environment
        self.status = status
        self.insightIdsUsed = insightIdsUsed
        self.reportedAt = reportedAt
        self.tenant = tenant
        self.intervention = intervention
    }
}

/// What happened to a consumption report.
public enum ConsumptionResult: Sendable, Equatable {
    /// Stored now, on time or late.
    case recorded(Timeliness)
    /// The same report was already stored: nothing changes.
    case alreadyRecorded
    /// A different report was already stored for this evaluation.
    case conflict(existing: ConsumptionStatus)
    /// No evaluation with that id for this caller in this environment.
    case evaluationNotFound
    /// These insight ids are not part of the evaluation.
    case unknownInsightIds([String])
    /// The intervention does not stand against the catalogue or the evaluation's times.
    case interventionRefused(InterventionRefusal)
}

/// One well-formed label, ready to store.
public struct Label: Sendable, Equatable {
    public var insightId: String
    public var outcome: LabelOutcome
    public var fraudType: FraudType?
    /// The calendar date the fraud or legitimacy was established, "YYYY-MM-DD".
    public var discoveredAt: String

    public init(insightId: String, outcome: LabelOutcome, fraudType: FraudType?, discoveredAt: String) {
        self.insightId = insightId
        self.outcome = outcome
        self.fraudType = fraudType
        self.discoveredAt = discoveredAt
    }
}

/// A label submission: items that passed validation (nil where an item was invalid).
public struct LabelSubmission: Sendable {
    public var callerId: String
    /// Only insights of this tenant's callers can be labelled; any other is `unknownInsight`.
    public var tenant: String
    public var environment: Environment
    public var items: [Label?]
    /// SHA-256 of the Idempotency-Key (the raw key is caller-controlled text, so it is not kept).
    public var idempotencyKeyHash: [UInt8]
    /// SHA-256 of the request body, to tell a replay from a reuse of the key.
    public var bodyHash: [UInt8]
    public var receivedAt: Milliseconds

    public init(
        callerId: String, tenant: String = Tenant.defaultName, environment: Environment, items: [Label?],
        idempotencyKeyHash: [UInt8], bodyHash: [UInt8], receivedAt: Milliseconds
    ) {
        self.callerId = callerId
        self.tenant = tenant
        self.environment = environment
        self.items = items
        self.idempotencyKeyHash = idempotencyKeyHash
        self.bodyHash = bodyHash
        self.receivedAt = receivedAt
    }
}

/// What happened to a label submission.
public enum LabelSubmissionResult: Sendable, Equatable {
    /// Processed now, or replayed from the first request with the same key and body.
    case processed([LabelResultStatus], replayed: Bool)
    /// The Idempotency-Key was used before with a different body.
    case idempotencyKeyReused
}

extension Caller {
    /// What a caller's name may be, for the message that refuses one.
    public static let nameRule = "name must be 1 to 100 bytes of printable text (no control, bidirectional or other format characters)"

    /// `name` trimmed of surrounding spaces and tabs when it may name a caller, else nil: 1 to
    /// 100 bytes, none of them a control character, a line or paragraph separator, or a format
    /// character (bidirectional overrides and isolates, zero-width characters). Names are shown
    /// in the console, `insightctl` tables, logs and a person's transparency page, where such a
    /// character could reorder or hide what is displayed around it.
    public static func validName(_ name: String) -> String? {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        let trimmed = String(name.drop(while: blank).reversed().drop(while: blank).reversed())
        guard !trimmed.isEmpty, trimmed.utf8.count <= 100 else { return nil }
        for scalar in trimmed.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse: return nil
            default: continue
            }
        }
        return trimmed
    }
}
