import CoachingModel
import Crypto
import InsightDomain

/// An evaluation's answer: its bytes and their receipt, the caller's quota (the answer's
/// RateLimit fields), and whether it was given before (a retry's).
public struct Evaluated: Sendable {
    /// The evaluation stored now; nil for a retry's answer, which stores none.
    public let record: EvaluationRecord?
    public let eventId: String
    /// The answer's body, byte for byte: the leaf its receipt proves.
    public let answer: [UInt8]
    public let receipt: Receipt
    public let quota: QuotaStatus
    /// True when the answer is the one given to an earlier request with the same `requestId`
    /// and bytes (docs/api.md, "Retries").
    public let replayed: Bool
}

/// Writes an evaluation's answer (the API's body): the answer is made before the evaluation is
/// stored, since its exact bytes are the leaf its receipt proves. It is made without the
/// caller's `requestId`, which `naming` puts in, so that what a retry is answered from holds
/// nothing the caller chose.
public protocol AnswerWriter: Sendable {
    /// The answer to `record` for the caller's `tenant`, without a `requestId` member.
    func answer(_ record: EvaluationRecord, tenant: String) -> [UInt8]
    /// `answer` (of event `eventId`) with its `requestId` member: the bytes the caller gets.
    func naming(_ answer: [UInt8], eventId: String, requestId: String) -> [UInt8]
}

/// Evaluating a risky moment (docs/api.md "POST /v1/evaluations"): the sandbox override, the
/// interaction's features, the subject's keyed hashes, opt-outs, the device limit, each insight's
/// answer, escalation by velocity, and the durable record.
/// A class: the completions of each evaluation hold it, one reference rather than a copy of its
/// dozen ports (each retained and released per evaluation).
public final class EvaluationService: Sendable {
    let ledger: any EvaluationLedger
    let models: InsightModels
    let hashKeys: HashKeys
    let clock: any Clock
    let limiter: any RateLimits
    let denials: DenialIndex
    let velocity: any VelocityState
    let escalation: EscalationPolicy
    let metrics: ServiceMetrics
    /// Time allowed for the consumption report after an evaluation.
    let consumptionGrace: Milliseconds
    /// The decision policy and its shadow (docs/decisions.md "Checking, reloading, shadowing").
    let decisions: DecisionPolicies
    /// The device limit, insight quotas and velocity read asked at once (one round trip to Redis).
    let gate: any EvaluationGate
    /// Counts the score bins of stored coaching insights for `insightd_model_score_psi`; nil: not measured.
    let drift: ScoreDrift?
    /// The caller's token: taken by the gate, or at a refusal before it.
    let quota: QuotaGate

    /// `gate` defaults to asking `limiter` and `velocity` one after the other.
    public init(
        ledger: any EvaluationLedger, models: InsightModels, hashKeys: HashKeys, clock: any Clock,
        limiter: any RateLimits, denials: DenialIndex, velocity: any VelocityState, escalation: EscalationPolicy,
        metrics: ServiceMetrics, consumptionGrace: Milliseconds, decisions: DecisionPolicies = DecisionPolicies(),
        gate: (any EvaluationGate)? = nil, drift: ScoreDrift? = nil
    ) {
        self.gate = gate ?? SeparateCallsGate(limits: limiter, velocity: velocity)
        quota = QuotaGate(limiter: limiter, metrics: metrics)
        self.drift = drift
        self.ledger = ledger
        self.models = models
        self.hashKeys = hashKeys
        self.clock = clock
        self.limiter = limiter
        self.denials = denials
        self.velocity = velocity
        self.escalation = escalation
        self.metrics = metrics
        self.consumptionGrace = consumptionGrace
        self.decisions = decisions
    }

    /// The schema versions answered, and the models loaded now (nil: none).
    public var catalogue: (schemaVersions: [Int], models: ModelRegistry?) {
        (InsightAnswerer.supportedSchemaVersions, models.snapshot)
    }

    /// The velocity rules that fired and the shadow decision policy's disagreements of
    /// `tenant`'s evaluations on this instance since it started.
    public func velocityCounts(of admin: Caller) -> TenantVelocityCounts {
        metrics.velocityCounts(tenant: admin.tenant, environment: admin.environment)
    }

    /// Refuses an override from anyone but a sandbox caller (checked before the body is read).
    public func permitOverride(for caller: Caller) throws(Rejection) {
        guard caller.environment == .sandbox else { throw .overrideNotAllowed }
    }

    /// Evaluates `request` for `caller`, taking a token of the caller's quota (with the gate's
    /// other questions, or at a refusal before them). Throws what refuses it before anything is
    /// stored; otherwise stores the evaluation and completes with it, and the quota after its
    /// token, once it is durable.
    /// The answer's bytes are written by `answer`.
    /// A request with a `requestId` answered before (within its consumption grace) is answered
    /// again from the store, whichever instance answered it, with the first answer's receipt: it
    /// takes a token like any request (a throttled caller's retry is refused like any other),
    /// and no velocity count, evaluation, leaf or head (docs/api.md, "Retries").
    public func evaluate(
        _ request: EvaluationRequest, by caller: Caller, override: SandboxOverride? = nil,
        answer: any AnswerWriter,
        resume: @escaping Resume, completion: @escaping Completion<Evaluated>
    ) throws(Rejection) {
        let quota = self.quota
        if override != nil { try quota.chargingRefusals(of: caller) { () throws(Rejection) in try permitOverride(for: caller) } }
        let retry = RetryKey(request, caller: caller, keyring: hashKeys.current(tenant: caller.tenant))
        if let retry, let entry = try quota.chargingRefusals(of: caller, { () throws(Rejection) in try storedAnswer(retry) }) {
            return try replay(entry, retry: retry, by: caller, writer: answer, resume: resume, completion: completion)
        }
        if let forced = override?.evaluationError {
            var exhausted = try quota.admit(caller)
            exhausted.remaining = 0
            throw .forced(
                forced,
                throttle: CallerThrottle(
                    reason: .callerRate, status: exhausted, retryAfterSeconds: 1,
                    view: limiter.view(caller), compliance: limiter.settings.compliance))
        }
        let (gateRequest, pending) = try quota.chargingRefusals(of: caller) { () throws(Rejection) in
            try prepare(request, by: caller, override: override, retry: retry)
        }
        if let answered = gate.answerAtOnce(gateRequest) {
            return try proceed(pending, gate: answered, answer: answer, resume: resume, completion: completion)
        }
        // A shared backend answers on a thread of its own; the evaluation goes on on its loop.
        let answered = gate.pass(gateRequest) { gateAnswer in
            resume {
                do throws(Rejection) {
                    try self.proceed(pending, gate: gateAnswer, answer: answer, resume: resume, completion: completion)
                } catch {
                    completion(.failure(error))
                }
            }
        }
        if let answered { try proceed(pending, gate: answered, answer: answer, resume: resume, completion: completion) }
    }

    /// What `request` asks of the gate, and what the evaluation made of it meanwhile; throws what
    /// refuses it before the gate (an interaction whose events make no features, an opted-out
    /// subject).
    private func prepare(
        _ request: EvaluationRequest, by caller: Caller, override: SandboxOverride?,
        retry: RetryKey?
    ) throws(Rejection) -> (GateRequest, PendingEvaluation) {
        let answerer = try InsightAnswerer(
            registry: models.snapshot, interaction: request.interaction,
            platform: request.source?.platform, override: override)
        // Raw identifiers stop here: only their keyed hashes go further. Each identifier is
        // hashed once under every key of the caller's tenant (active first): the active hash is
        // stored, all are looked up.
        let tenant = caller.tenant
        let keyring = hashKeys.current(tenant: tenant)
        let accountHashes = request.subject.account.map { keyring.lookupHashes($0, kind: .account) }
        let deviceHashes = request.subject.device.map { keyring.lookupHashes($0, kind: .device) }
        let counterpartyHashes = request.subject.counterparty.map { keyring.lookupHashes($0, kind: .counterparty) }
        let subject = HashedSubject(
            account: accountHashes?.first, device: deviceHashes?.first,
            counterparty: counterpartyHashes?.first, keyId: keyring.active.keyId)
        // A person who switched insights off (and whose cooldown has passed) gets no evaluation.
        let now = clock.now()
        if let accountHashes, denials.isDenied(tenant, caller.environment, .account, hashes: accountHashes, now: now) {
            throw .optedOut
        }
        if let deviceHashes, denials.isDenied(tenant, caller.environment, .device, hashes: deviceHashes, now: now) {
            throw .optedOut
        }
        // The caller's token, the device's limit, a unit of quota for each insight that consults a
        // model, and what velocity knows of the hashed identifiers, asked at once; velocity is not
        // asked while its counts are being rebuilt (they would be short).
        let asksQuota = request.insights.map(answerer.asksQuota)
        let query = VelocityQuery(
            environment: caller.environment,
            accounts: accountHashes ?? [], devices: deviceHashes ?? [], counterparties: counterpartyHashes ?? [],
            isPayment: request.category == .payment)
        let gateRequest = GateRequest(
            caller: caller, takesCallerToken: true, environment: caller.environment, device: subject.device,
            insightTypes: zip(request.insights, asksQuota).filter(\.1).map(\.0.type),
            velocity: velocity.isRebuilding ? nil : query)
        return (
            gateRequest,
            PendingEvaluation(
                request: request, caller: caller, override: override, answerer: answerer,
                subject: subject, asksQuota: asksQuota, now: now, retry: retry)
        )
    }

    /// What an evaluation made of its request before its gate answered.
    struct PendingEvaluation: Sendable {
        let request: EvaluationRequest
        let caller: Caller
        let override: SandboxOverride?
        let answerer: InsightAnswerer
        let subject: HashedSubject
        /// Per requested insight: whether it takes a unit of its type's quota.
        let asksQuota: [Bool]
        let now: Milliseconds
        /// The request's retry key, when it named a `requestId`.
        let retry: RetryKey?
    }

    /// The evaluation once its gate answered: the caller's and the device's verdicts, each
    /// insight's answer, escalation by velocity, the decision, and the durable record.
    private func proceed(
        _ pending: PendingEvaluation, gate gateAnswer: GateAnswer, answer writeAnswer: any AnswerWriter,
        resume: @escaping Resume, completion: @escaping Completion<Evaluated>
    ) throws(Rejection) {
        let (request, caller, answerer, now) = (pending.request, pending.caller, pending.answerer, pending.now)
        let tenant = caller.tenant
        let quotaStatus = try quota.verdict(gateAnswer.caller ?? limiter.admit(caller), caller: caller)
        if let retryAfter = gateAnswer.deviceRetryAfter {
            metrics.throttled(.deviceRate)
            throw .deviceThrottled(retryAfterSeconds: retryAfter, perHour: limiter.settings.devicePerHour)
        }
        // The evaluation's id, and its insights' ids made from it.
        let ids = EvaluationIdentifiers.make(insights: request.insights.count, milliseconds: now)
        var insights = Self.answers(
            request, insightIds: ids.insightIds, asksQuota: pending.asksQuota,
            admitted: gateAnswer.insightsAdmitted, answerer: answerer)
        var shadows = answerer.shadowAnswers(served: insights, category: request.category, eventId: ids.eventId)
        // Velocity over hashed identifiers may raise a coaching value by one level, never lower it.
        let (trackedValue, raised) = Self.escalate(
            &insights, signals: gateAnswer.signals, policy: escalation, metrics: metrics,
            tenant: tenant, environment: caller.environment)
        // A shadow answer is escalated as it would be if its version served, so that the report
        // compares like with like; it counts no velocity metric and tracks nothing.
        if !shadows.isEmpty {
            _ = Self.escalate(
                &shadows, signals: gateAnswer.signals, policy: escalation, metrics: nil, tenant: tenant,
                environment: caller.environment)
        }
        // The decision reads the final values (a sandbox-forced one included) and the request's
        // facts; the shadow policy's answer is only counted, as the decision is, once stored.
        let facts = DecisionFacts(request, insights: insights, coaching: trackedValue)
        let policies = decisions.snapshot
        let decision = policies.live.decide(facts)
        let shadowDecision = policies.shadow.map { $0.decide(facts) }
        // The model's input is kept for training only when the caller opted in (nothing is done
        // otherwise), and never for a sandbox override's forced answers.
        let trainingVector =
            caller.trainingCapture && pending.override == nil
            ? Self.trainingVector(answerer.features, insights: insights, tenant: tenant) : nil
        var record = EvaluationRecord(
            eventId: ids.eventId, callerId: caller.callerId, environment: caller.environment,
            category: request.category, createdAt: now, reportConsumptionBy: now + consumptionGrace, subject: pending.subject,
            insights: insights, trackedValue: trackedValue, raisedByVelocity: raised, decision: decision,
            shadowInsights: shadows, trainingVector: trainingVector, source: request.source)
        record.tenant = tenant
        // What the completions below need, taken out one by one: a closure that named `request`
        // or `pending` would copy all of it (strings, arrays, each retained) into its context.
        let initiator = request.initiator.effectiveKind
        let (droppedEvents, skippedEvents, retry) = (request.droppedEvents, request.skippedEvents, pending.retry)
        let metrics = self.metrics, velocity = self.velocity, drift = self.drift
        let bare = writeAnswer.answer(record, tenant: tenant)
        let answer = retry.map { writeAnswer.naming(bare, eventId: record.eventId, requestId: $0.requestId) } ?? bare
        if let retry {
            record.retry = RetryEntry(
                key: retry.keys[0], digest: retry.digests[0], eventId: record.eventId, answer: bare,
                expiresAt: record.reportConsumptionBy)
        }
        let stored = record
        // What follows the commit, made here on the request's loop and run there: the store
        // completes on its own thread (the SQLite writer, the one serial stage every evaluation
        // waits for), which then only hands the result over, instead of copying this closure's
        // captures (the request, the record) into a new one and recording velocity itself.
        let committed: @Sendable (Result<Receipt, StoreFailure>) -> Void = { result in
            let receipt: Receipt
            switch result {
            case .success(let made): receipt = made
            case .failure(let failure):
                // Of two requests racing under one requestId, the store kept the other's
                // evaluation (one live entry per key): this one is answered as its retry.
                guard let retry else { return completion(.failure(.store(failure))) }
                do throws(Rejection) {
                    guard let entry = try self.storedAnswer(retry) else { throw .store(failure) }
                    // Admitted before either was stored, it has taken its token.
                    return try self.replay(
                        entry, retry: retry, by: caller, charged: quotaStatus, writer: writeAnswer, resume: resume,
                        completion: completion)
                } catch {
                    return completion(.failure(error))
                }
            }
            // Velocity records the evaluation before it is answered, so that the next evaluation
            // on any instance counts it; a shared backend records many at once from a thread of
            // its own, so no loop waits for it (and calls `then` there: hence `resume`, at once
            // when the state is in memory).
            let event = VelocityEvent(
                environment: stored.environment, time: stored.createdAt,
                account: stored.subject.account, device: stored.subject.device,
                counterparty: stored.subject.counterparty,
                isPayment: stored.category == .payment, value: stored.trackedValue,
                raisedByVelocity: stored.raisedByVelocity)
            velocity.record(event) {
                resume {
                    metrics.evaluated(stored, tenant: tenant)
                    drift?.record(stored)
                    metrics.captured(stored)
                    metrics.dropped(droppedEvents, by: stored.source)
                    metrics.skipped(skippedEvents, by: stored.source)
                    metrics.decided(decision.action, stored, initiator: initiator)
                    if let shadowDecision {
                        metrics.shadowDecided(shadowDecision, live: decision, tenant: tenant, environment: stored.environment)
                    }
                    completion(
                        .success(
                            Evaluated(
                                record: stored, eventId: stored.eventId, answer: answer, receipt: receipt,
                                quota: quotaStatus, replayed: false)))
                }
            }
        }
        ledger.record(stored, answer: answer) { result in resume { committed(result) } }
    }

    /// The stored answer a request with `retry`'s key is answered with, if any; throws
    /// `requestIdReused` when it was given to other bytes.
    private func storedAnswer(_ retry: RetryKey) throws(Rejection) -> RetryEntry? {
        let found: RetryEntry?
        do {
            found = try ledger.retryEntry(keys: retry.keys, now: clock.now())
        } catch {
            throw .unreadable(.evaluations)
        }
        guard let entry = found else { return nil }
        // The entry was made under one of the tenant's keys; its digest is compared under the same key.
        guard let index = retry.keys.firstIndex(of: entry.key),
            ConstantTime.equals(retry.digests[index], entry.digest)
        else {
            metrics.retried(tenant: retry.tenant, replayed: false)
            throw .requestIdReused
        }
        return entry
    }

    /// Answers a retry with the stored answer, its `requestId` put back (the first answer's bytes
    /// exactly), and the first answer's receipt, made again from the head the entry names: nothing
    /// is written. It takes the caller's token through the gate, as an evaluation does (one round
    /// trip to a shared backend, answered off the loop), unless it was taken already (`charged`:
    /// the quota after it).
    private func replay(
        _ entry: RetryEntry, retry: RetryKey, by caller: Caller, charged: QuotaStatus? = nil, writer: any AnswerWriter,
        resume: @escaping Resume, completion: @escaping Completion<Evaluated>
    ) throws(Rejection) {
        let answer = writer.naming(entry.answer, eventId: entry.eventId, requestId: retry.requestId)
        if let charged {
            return answerAgain(
                entry, answer: answer, retry: retry, caller: caller, quota: charged, resume: resume, completion: completion)
        }
        let toll = GateRequest(
            caller: caller, takesCallerToken: true, environment: caller.environment, device: nil, insightTypes: [],
            velocity: nil)
        let admitted: @Sendable (GateAnswer) throws(Rejection) -> Void = { gateAnswer throws(Rejection) in
            let status = try self.quota.verdict(gateAnswer.caller ?? self.limiter.admit(caller), caller: caller)
            self.answerAgain(
                entry, answer: answer, retry: retry, caller: caller, quota: status, resume: resume, completion: completion)
        }
        if let answered = gate.answerAtOnce(toll) { return try admitted(answered) }
        let answered = gate.pass(toll) { gateAnswer in
            resume {
                do throws(Rejection) { try admitted(gateAnswer) } catch { completion(.failure(error)) }
            }
        }
        if let answered { try admitted(answered) }
    }

    /// Completes a retry, its token taken, with `answer` and the first answer's receipt.
    private func answerAgain(
        _ entry: RetryEntry, answer: [UInt8], retry: RetryKey, caller: Caller, quota: QuotaStatus, resume: @escaping Resume,
        completion: @escaping Completion<Evaluated>
    ) {
        let metrics = self.metrics
        let answered: @Sendable (Receipt) -> Void = { receipt in
            metrics.retried(tenant: retry.tenant, replayed: true)
            completion(
                .success(
                    Evaluated(
                        record: nil, eventId: entry.eventId, answer: answer, receipt: receipt, quota: quota, replayed: true)))
        }
        if let receipt = entry.firstHead?.receipt(ofLeaf: MerkleTree.leafHash(of: answer)) { return answered(receipt) }
        // An entry stored before its head was named (migration 0023), within one grace of the
        // upgrade: its answer gets a receipt of its own, a leaf of the writer's next batch.
        ledger.reissue(answer: answer, tenant: retry.tenant, environment: caller.environment) { result in
            resume {
                switch result {
                case .success(let receipt): answered(receipt)
                case .failure(let failure): completion(.failure(.store(failure)))
                }
            }
        }
    }

    /// What training capture keeps of an evaluation: its features with the first coaching insight
    /// a model answered with a value (the id labels name); nil without interaction features or
    /// without such an insight.
    static func trainingVector(_ features: FeatureVector?, insights: [InsightRecord], tenant: String) -> TrainingVector? {
        guard let features else { return nil }
        for insight in insights where insight.type == InsightType.isLikelyBeingCoached.rawValue {
            guard case .value = insight.outcome, let version = insight.modelVersion else { continue }
            return TrainingVector(insightId: insight.insightId, modelVersion: version, tenant: tenant, features: features.values)
        }
        return nil
    }

    /// Each requested insight's answer; an insight that asked for quota (`asksQuota`) takes the
    /// next of the gate's verdicts (`admitted`, in the same order).
    static func answers(
        _ request: EvaluationRequest, insightIds: [String], asksQuota: [Bool], admitted: [Bool],
        answerer: InsightAnswerer
    ) -> [InsightRecord] {
        var verdicts = admitted.makeIterator()
        var insights: [InsightRecord] = []
        insights.reserveCapacity(request.insights.count)
        for (insight, (id, quota)) in zip(request.insights, zip(insightIds, asksQuota)) {
            insights.append(
                answerer.answer(
                    insight, category: request.category, insightId: id,
                    admitted: quota ? verdicts.next() ?? false : true))
        }
        return insights
    }

    /// Applies the escalation policy to every coaching insight that has a value (a sandbox-forced
    /// value is left as forced; without signals nothing is escalated). Returns the value velocity tracking records — the highest
    /// final coaching value — and whether velocity raised it.
    static func escalate(
        _ insights: inout [InsightRecord], signals: VelocitySignals?, policy: EscalationPolicy,
        metrics: ServiceMetrics?, tenant: String, environment: Environment
    ) -> (InsightValue?, Bool) {
        var tracked: InsightValue?, raised = false, counted = false
        for i in insights.indices {
            guard insights[i].type == InsightType.isLikelyBeingCoached.rawValue,
                case .value(let value, let reasons) = insights[i].outcome
            else { continue }
            // A sandbox-forced value stays as forced, but is tracked like any answer.
            let escalation =
                reasons.contains(SandboxOverride.reason)
                ? Escalation(value: value) : signals.map { policy.apply(value, signals: $0) } ?? Escalation(value: value)
            if !counted { metrics?.velocityFired(escalation, tenant: tenant, environment: environment); counted = true }
            if escalation.value != value || !escalation.reasons.isEmpty {
                insights[i].outcome = .value(escalation.value, reasons: reasons + escalation.reasons.filter { !reasons.contains($0) })
            }
            if tracked.map({ rank(escalation.value) > rank($0) }) ?? true {
                tracked = escalation.value
                raised = escalation.raised
            }
        }
        return (tracked, raised)
    }

    static func rank(_ value: InsightValue) -> Int { InsightValue.allCases.firstIndex(of: value) ?? 0 }
}

/// What names a request with a `requestId` for its retries: its key and the digest of its bytes
/// under each of the tenant's hash keys, active first (an entry made before a rotation is still
/// found).
struct RetryKey: Sendable {
    let requestId: String
    let tenant: String
    let keys: [[UInt8]]
    let digests: [[UInt8]]

    /// Nil for a request without a `requestId` (or whose bytes the API did not digest).
    init?(_ request: EvaluationRequest, caller: Caller, keyring: HashKeyring) {
        guard let requestId = request.requestId, let body = request.bodyDigest else { return nil }
        self.requestId = requestId
        tenant = caller.tenant
        keys = keyring.all.map { $0.requestKey(callerId: caller.callerId, requestId: requestId) }
        digests = keyring.all.map { $0.requestDigest(body) }
    }
}
