import InsightDomain

/// Why a use case refused a request: the domain's reasons, which the API turns into problem
/// codes in one place (`Problem(_ rejection:)`).
public enum Rejection: Error, Sendable, Equatable {
    /// A field breaks a rule the decoder could not check (e.g. an inconsistent interaction).
    case invalid(field: String, detail: String)
    /// No valid key: unknown, revoked, or not a key at all.
    case unauthorized(detail: String)
    /// The key's caller lacks the role the operation needs.
    case forbidden(missing: Role)
    /// Credentials cannot be checked now (the store failed).
    case credentialsUnavailable
    /// The caller is over its (possibly penalised) rate.
    case throttled(CallerThrottle)
    /// The device is over its hourly limit.
    case deviceThrottled(retryAfterSeconds: Int, perHour: Int)
    /// The tenant holds as many opt-outs as the operator allows.
    case denialCapacity(capacity: Int)
    /// A production caller sent a sandbox override.
    case overrideNotAllowed
    /// A sandbox caller forced this evaluation-level error; `throttle` is what a real
    /// `rateLimitExceeded` would say.
    case forced(SandboxOverride.EvaluationError, throttle: CallerThrottle)
    /// The subject switched insights off.
    case optedOut
    /// No evaluation with this id for this caller and environment.
    case evaluationNotFound
    /// A different consumption report was recorded before.
    case consumptionConflict(existing: ConsumptionStatus)
    /// `insightIdsUsed[index]` is not an insight of the evaluation.
    case unknownInsightId(index: Int)
    /// The report's intervention does not stand against the catalogue or the evaluation's times.
    case interventionRefused(InterventionRefusal)
    /// No catalogue entry of that id and version in the admin's tenant and environment.
    case templateNotFound
    /// A catalogue entry of that id and version exists with other content (entries never change).
    case templateConflict(InterventionTemplate)
    /// The idempotency key was used before with a different body.
    case idempotencyKeyReused
    /// The evaluation's `requestId` was used before (within the consumption grace) by a
    /// request with other bytes.
    case requestIdReused
    /// An admin asked for data of the environment its key is not of (`Caller.administers`):
    /// `environment` is the key's own.
    case otherEnvironment(Environment)
    /// No caller with this id in the admin's tenant and environment.
    case callerNotFound
    /// The caller (of the admin's tenant) has no key with this id.
    case keyNotFound
    /// A read of the store failed; retrying may succeed.
    case unreadable(StoreRead)
    /// A write could not be carried out.
    case store(StoreFailure)

    /// What could not be read.
    public enum StoreRead: String, Sendable {
        case callers = "Callers", authorizations = "Authorizations", evaluations = "Evaluations",
            interventions = "Intervention templates"
    }
}

/// Everything a 429 for a caller's quota says, so the caller can fix its behaviour from it.
public struct CallerThrottle: Sendable, Equatable {
    public var reason: ThrottleReason
    public var status: QuotaStatus
    public var retryAfterSeconds: Int
    public var view: RateLimitView
    public var compliance: CompliancePolicy
}
