/// What the API needs from storage. Writes complete asynchronously, after their transaction
/// is durably committed, so that an answer is never sent for data that could still be lost.

/// Why a store operation could not be carried out.
public enum StoreFailure: Error, Sendable, Equatable {
    /// The write queue is full: the caller should retry after a short delay.
    case overloaded
    /// The store is stopping or failed; the message is for logs, never for callers.
    case unavailable(String)
}

/// Durable writes of evaluations, consumption reports and labels.
public protocol EvaluationLedger: Sendable {
    /// Stores an evaluation; `completion` runs after the commit (on a store thread).
    func record(_ evaluation: EvaluationRecord,
                completion: @escaping @Sendable (Result<Void, StoreFailure>) -> Void)

    /// Applies a consumption report atomically (lookup, checks and insert in one transaction).
    func report(_ report: ConsumptionReport,
                completion: @escaping @Sendable (Result<ConsumptionResult, StoreFailure>) -> Void)

    /// Applies a label submission atomically, honouring its idempotency key.
    func submit(_ submission: LabelSubmission,
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
    /// Changes rate and/or burst; completes with the updated caller, or nil if `tenant` has none
    /// with this id.
    func updateQuota(callerId: String, tenant: String, rate: Double?, burst: Int?,
                     completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void)
    /// Records that the caller's reporting penalty was reset at `time`; completes with false
    /// if `tenant` has no such caller.
    func resetPenalty(callerId: String, tenant: String, at time: Milliseconds,
                      completion: @escaping @Sendable (Result<Bool, StoreFailure>) -> Void)
}
