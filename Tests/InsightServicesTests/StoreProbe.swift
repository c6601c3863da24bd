import InsightDomain
import InsightStoreFakes
import Synchronization

/// The store ports the use cases hold, passed through to an `InMemoryStore`, with a record of
/// everything handed to the store (to show what is kept, and that a refused request never
/// reached it) and switches that make writes or reads fail as a real store can.
final class StoreProbe: EvaluationLedger, AuthorizationStore, CallerAdministration, CredentialDirectory, SubjectHistory,
    SubjectErasure
{
    /// What reached the store, in order.
    struct Handed {
        var evaluations: [EvaluationRecord] = []
        var reports: [ConsumptionReport] = []
        var submissions: [LabelSubmission] = []
        var authorizations: [(AuthorizationRequest, SubjectHashes)] = []
        var subjectReads: [SubjectHashes] = []
        /// Every value above as `dump` prints it (every member, every string, every byte).
        var transcript = ""
    }

    let inner: InMemoryStore
    private let handed = Mutex(Handed())
    private let writeFailure = Mutex<StoreFailure?>(nil)
    private let readsFail = Mutex(false)
    private let retryLookupsMissed = Mutex(0)
    private let reissued = Mutex<[[UInt8]]>([])

    init(_ inner: InMemoryStore) { self.inner = inner }

    /// What reached the store so far.
    var received: Handed { handed.withLock { $0 } }

    /// Makes every write fail with `failure` (nil: writes succeed again).
    func failWrites(_ failure: StoreFailure?) { writeFailure.withLock { $0 = failure } }

    /// Makes every synchronous read throw.
    func failReads(_ fail: Bool) { readsFail.withLock { $0 = fail } }

    /// Makes the next `count` retry lookups find nothing, as for a request racing another under
    /// its requestId (each looked before either was stored).
    func missRetryLookups(_ count: Int) { retryLookupsMissed.withLock { $0 = count } }

    /// The answers given again, in order.
    var reissuedAnswers: [[UInt8]] { reissued.withLock { $0 } }

    private struct ReadFailure: Error {}

    private func note<T>(_ value: T, _ add: (inout Handed) -> Void) {
        var text = ""
        dump(value, to: &text)
        handed.withLock { handed in
            add(&handed)
            handed.transcript += text
        }
    }

    private func checkRead() throws { if readsFail.withLock({ $0 }) { throw ReadFailure() } }

    // MARK: EvaluationLedger

    func record(
        _ evaluation: EvaluationRecord, answer: [UInt8],
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        note(evaluation) { $0.evaluations.append(evaluation) }
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.record(evaluation, answer: answer, completion: completion)
    }

    func retryEntry(keys: [[UInt8]], now: Milliseconds) throws -> RetryEntry? {
        try checkRead()
        let missed = retryLookupsMissed.withLock { missed in
            defer { missed = max(0, missed - 1) }
            return missed > 0
        }
        return missed ? nil : try inner.retryEntry(keys: keys, now: now)
    }

    func reissue(
        answer: [UInt8], tenant: String, environment: Environment,
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        reissued.withLock { $0.append(answer) }
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.reissue(answer: answer, tenant: tenant, environment: environment, completion: completion)
    }

    func report(_ report: ConsumptionReport, completion: @escaping @Sendable (Result<ConsumptionResult, StoreFailure>) -> Void) {
        note(report) { $0.reports.append(report) }
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.report(report, completion: completion)
    }

    func submit(
        _ submission: LabelSubmission,
        completion: @escaping @Sendable (Result<LabelSubmissionResult, StoreFailure>) -> Void
    ) {
        note(submission) { $0.submissions.append(submission) }
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.submit(submission, completion: completion)
    }

    // MARK: SubjectHistory, SubjectErasure

    func subjectHistory(_ query: SubjectHistoryQuery) throws -> SubjectHistoryPage {
        try checkRead()
        return try inner.subjectHistory(query)
    }

    func erase(_ subject: ErasedSubject, completion: @escaping @Sendable (Result<SubjectErasureReport, StoreFailure>) -> Void) {
        note(subject) { _ in }
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.erase(subject, completion: completion)
    }

    // MARK: AuthorizationStore

    func apply(
        _ request: AuthorizationRequest, for subject: SubjectHashes, now: Milliseconds, cooldown: Milliseconds,
        completion: @escaping @Sendable (Result<AuthorizationRecord, StoreFailure>) -> Void
    ) {
        note(subject) { $0.authorizations.append((request, subject)) }
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.apply(request, for: subject, now: now, cooldown: cooldown, completion: completion)
    }

    func record(for subject: SubjectHashes) throws -> AuthorizationRecord? {
        note(subject) { $0.subjectReads.append(subject) }
        try checkRead()
        return try inner.record(for: subject)
    }

    func denials() throws -> [StoredDenial] {
        try checkRead()
        return try inner.denials()
    }

    func authorizations(renewedSince since: Milliseconds) throws -> [StoredAuthorization] {
        try checkRead()
        return try inner.authorizations(renewedSince: since)
    }

    // MARK: CallerAdministration

    func callers(tenant: String) throws -> [Caller] {
        try checkRead()
        return try inner.callers(tenant: tenant)
    }

    func caller(_ callerId: String, tenant: String) throws -> Caller? {
        try checkRead()
        return try inner.caller(callerId, tenant: tenant)
    }

    func ceiling(tenant: String) throws -> TenantCeiling {
        try checkRead()
        return try inner.ceiling(tenant: tenant)
    }

    func updateCaller(
        callerId: String, tenant: String, rate: Double?, burst: Int?, trainingCapture: Bool?,
        completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void
    ) {
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.updateCaller(
            callerId: callerId, tenant: tenant, rate: rate, burst: burst, trainingCapture: trainingCapture,
            completion: completion)
    }

    func resetPenalty(
        callerId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<Bool, StoreFailure>) -> Void
    ) {
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.resetPenalty(callerId: callerId, tenant: tenant, at: time, completion: completion)
    }

    func keys(callerId: String, tenant: String) throws -> [StoredKey]? {
        try checkRead()
        return try inner.keys(callerId: callerId, tenant: tenant)
    }

    func revokeKey(
        callerId: String, keyId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<StoredKey?, StoreFailure>) -> Void
    ) {
        if let failure = writeFailure.withLock({ $0 }) { return completion(.failure(failure)) }
        inner.revokeKey(callerId: callerId, keyId: keyId, tenant: tenant, at: time, completion: completion)
    }

    // MARK: CredentialDirectory

    func credential(keyId: String) throws -> (key: StoredKey, caller: Caller)? {
        try checkRead()
        return try inner.credential(keyId: keyId)
    }
}
