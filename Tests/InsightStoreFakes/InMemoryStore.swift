import Crypto
import Foundation
import InsightDomain
import Synchronization

/// Every store port in memory, for use-case tests: one `Mutex` over the whole state, each
/// operation atomic, completions called before the method returns. It passes the same
/// `StoreContract` as the SQLite stores, which is what makes it a faithful stand-in.
public final class InMemoryStore: EvaluationLedger, CredentialDirectory, CallerRegistration, CallerAdministration,
    AuthorizationStore, ReportingStatsSource, VelocityHistory, SubjectHistory, RetentionPurge, SubjectErasure, DecisionReporting,
    ModelPerformanceSource, TrainingVectorSource, ReceiptLog, InterventionCatalog
{
    /// Rows each kind loses per retention batch (as `Retention.batchSize`).
    public let batchSize: Int

    private struct StoredCaller {
        var caller: Caller
        var penaltyResetAt: Milliseconds?
    }
    private struct StoredLabel {
        var label: Label
        var environment: Environment
        var callerId: String
        var receivedAt: Milliseconds
    }
    private struct Submission {
        var bodyHash: [UInt8]
        var results: [LabelResultStatus]
        var createdAt: Milliseconds
    }
    private struct SubmissionKey: Hashable {
        var callerId: String
        var keyHash: [UInt8]
    }
    private struct SubjectKey: Hashable {
        var tenant: String
        var environment: Environment
        var kind: AuthorizableKind
        var hash: [UInt8]
    }
    private struct State {
        /// In creation order.
        var callers: [StoredCaller] = []
        var keys: [StoredKey] = []
        /// In the order stored (the store's commit order).
        var evaluations: [EvaluationRecord] = []
        /// Retry entries by key (as the stores' unique key).
        var retries: [[UInt8]: RetryEntry] = [:]
        /// Each evaluation's sequence (the store's order, like SQLite's rowid), by event id.
        var sequences: [String: Int64] = [:]
        var lastSequence: Int64 = 0
        var reports: [String: (report: ConsumptionReport, timeliness: Timeliness)] = [:]
        var labels: [StoredLabel] = []
        var submissions: [SubmissionKey: Submission] = [:]
        var authorizations: [SubjectKey: AuthorizationRecord] = [:]
        /// Every receipt head, in the order made (one per evaluation: each is its own batch).
        var heads: [LoggedHead] = []
        var ceilings: [String: TenantCeiling] = [:]
        /// The intervention catalogue, in the order added.
        var templates: [InterventionTemplate] = []

        func callerIndex(_ id: String) -> Int? { callers.firstIndex { $0.caller.callerId == id } }

        /// A row whose caller is unknown belongs to tenant `default`, as in the SQLite store.
        func tenant(ofCaller id: String) -> String { callerIndex(id).map { callers[$0].caller.tenant } ?? Tenant.defaultName }
    }

    private let state = Mutex(State())

    /// Signs the head of each evaluation's answer (a batch of one).
    public let receipts: ReceiptIssuer

    public init(batchSize: Int = 1000, receipts: ReceiptIssuer = .withEphemeralKey(instance: "in-memory")) {
        self.batchSize = batchSize
        self.receipts = receipts
    }

    // MARK: EvaluationLedger

    public func record(
        _ evaluation: EvaluationRecord, answer: [UInt8],
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        let result: Result<Receipt, StoreFailure> = state.withLock { state in
            guard evaluation.insights.count <= EvaluationRecord.maxServedInsights,
                evaluation.shadowInsights.count <= EvaluationRecord.maxShadowInsights,
                !state.evaluations.contains(where: { $0.eventId == evaluation.eventId })
            else {
                return .failure(.unavailable("evaluation \(evaluation.eventId) is invalid or already stored"))
            }
            if let retry = evaluation.retry {
                if let live = state.retries[retry.key], live.isLive(at: evaluation.createdAt) {
                    return .failure(.unavailable("a live retry entry holds this request key"))
                }
            }
            let leaf = evaluation.leaf(of: answer)
            guard let batch = receipts.issue(leafHashes: [leaf.hash], tenant: leaf.tenant, environment: leaf.environment) else {
                return .failure(.unavailable("the receipt head could not be signed"))
            }
            receipts.committed(batch)
            let head = LoggedHead(signed: batch.head, leaves: batch.leaves)
            state.heads.append(head)
            // The entry names its answer's head, as the stores' do (migration 0023).
            if var retry = evaluation.retry {
                retry.firstHead = head
                state.retries[retry.key] = retry
            }
            state.evaluations.append(evaluation)
            state.lastSequence += 1
            state.sequences[evaluation.eventId] = state.lastSequence
            return .success(batch.receipt(at: 0))
        }
        completion(result)
    }

    public func retryEntry(keys: [[UInt8]], now: Milliseconds) throws -> RetryEntry? {
        state.withLock { state in
            for key in keys { if let entry = state.retries[key], entry.isLive(at: now) { return entry } }
            return nil
        }
    }

    public func reissue(
        answer: [UInt8], tenant: String, environment: Environment,
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        let result: Result<Receipt, StoreFailure> = state.withLock { state in
            guard
                let batch = receipts.issue(
                    leafHashes: [MerkleTree.leafHash(of: answer)], tenant: tenant, environment: environment.rawValue)
            else {
                return .failure(.unavailable("the receipt head could not be signed"))
            }
            receipts.committed(batch)
            state.heads.append(LoggedHead(signed: batch.head, leaves: batch.leaves))
            return .success(batch.receipt(at: 0))
        }
        completion(result)
    }

    // MARK: ReceiptLog

    public func heads(of chain: ReceiptChain, from: Int64, limit: Int, withLeaves: Bool) throws -> [LoggedHead] {
        state.withLock { state in
            state.heads.filter { $0.signed.head.chain == chain && $0.signed.head.sequence >= from }
                .sorted { $0.signed.head.sequence < $1.signed.head.sequence }
                .prefix(limit).map { LoggedHead(signed: $0.signed, leaves: withLeaves ? $0.leaves : []) }
        }
    }

    public func latestHeads(tenant: String?, environment: String?) throws -> [SignedHead] {
        state.withLock { state in
            Dictionary(grouping: state.heads, by: \.signed.head.chain).values
                .compactMap { $0.max { $0.signed.head.sequence < $1.signed.head.sequence }?.signed }
                .filter { (tenant == nil || $0.head.tenant == tenant) && (environment == nil || $0.head.environment == environment) }
                .sorted {
                    ($0.head.instance, $0.head.tenant ?? "", $0.head.environment ?? "") < (
                        $1.head.instance, $1.head.tenant ?? "", $1.head.environment ?? ""
                    )
                }
        }
    }

    public func report(
        _ r: ConsumptionReport,
        completion: @escaping @Sendable (Result<ConsumptionResult, StoreFailure>) -> Void
    ) {
        let result: ConsumptionResult = state.withLock { state in
            guard
                let evaluation = state.evaluations.first(where: {
                    $0.eventId == r.eventId && $0.callerId == r.callerId && $0.environment == r.environment
                })
            else { return .evaluationNotFound }
            let ids = Set(evaluation.insights.map(\.insightId))
            let unknown = r.insightIdsUsed.filter { !ids.contains($0) }
            if !unknown.isEmpty { return .unknownInsightIds(unknown) }
            if let intervention = r.intervention {
                let entry = intervention.template.flatMap { reference in
                    state.templates.first {
                        $0.tenant == r.tenant && $0.environment == r.environment && $0.reference == reference
                    }
                }
                if let refusal = InterventionRefusal.check(
                    intervention, template: entry.map { ($0.kind, $0.retiredAt) }, createdAt: evaluation.createdAt,
                    reportedAt: r.reportedAt)
                {
                    return .interventionRefused(refusal)
                }
            }
            if let existing = state.reports[r.eventId]?.report {
                return .repeated(r, stored: existing.status, insightIds: existing.insightIdsUsed, intervention: existing.intervention)
            }
            let timeliness = Timeliness(reportedAt: r.reportedAt, deadline: evaluation.reportConsumptionBy)
            state.reports[r.eventId] = (r, timeliness)
            return .recorded(timeliness)
        }
        completion(.success(result))
    }

    public func submit(
        _ s: LabelSubmission,
        completion: @escaping @Sendable (Result<LabelSubmissionResult, StoreFailure>) -> Void
    ) {
        let result: LabelSubmissionResult = state.withLock { state in
            let key = SubmissionKey(callerId: s.callerId, keyHash: s.idempotencyKeyHash)
            if let previous = state.submissions[key] {
                return .replaying(s, keptBodyHash: previous.bodyHash, keptResults: previous.results)
            }
            var results: [LabelResultStatus] = []
            for item in s.items {
                guard let label = item else { results.append(.invalid); continue }
                // A label's tenant is its labeller's; the insight's, its evaluation's caller's.
                if let existing = state.labels.first(where: {
                    $0.label.insightId == label.insightId && $0.environment == s.environment
                        && state.tenant(ofCaller: $0.callerId) == s.tenant
                }) {
                    results.append(
                        .repeating(
                            label, storedOutcome: existing.label.outcome.rawValue,
                            storedFraudType: existing.label.fraudType?.rawValue))
                    continue
                }
                let known = state.evaluations.contains { e in
                    e.environment == s.environment && state.tenant(ofCaller: e.callerId) == s.tenant
                        && e.insights.contains { $0.insightId == label.insightId }
                }
                guard known else { results.append(.unknownInsight); continue }
                state.labels.append(
                    StoredLabel(
                        label: label, environment: s.environment, callerId: s.callerId,
                        receivedAt: s.receivedAt))
                results.append(.accepted)
            }
            if results.contains(.accepted) {
                state.submissions[key] = Submission(bodyHash: s.bodyHash, results: results, createdAt: s.receivedAt)
            }
            return .processed(results, replayed: false)
        }
        completion(.success(result))
    }

    // MARK: CredentialDirectory

    public func credential(keyId: String) throws -> (key: StoredKey, caller: Caller)? {
        state.withLock { state in
            guard let key = state.keys.first(where: { $0.keyId == keyId }), let index = state.callerIndex(key.callerId) else {
                return nil
            }
            return (key, state.callers[index].caller)
        }
    }

    // MARK: CallerRegistration

    public func create(
        name: String, tenant: String = Tenant.defaultName, environment: Environment, roles: Set<Role>,
        rate: Double, burst: Int, now: Milliseconds, callerId: String
    ) throws -> (Caller, APIKey) {
        let caller = try Caller.registering(
            callerId: callerId, name: name, tenant: tenant, environment: environment,
            roles: roles, rate: rate, burst: burst, now: now)
        let key = APIKey.generate()
        try state.withLock { state in
            guard state.callerIndex(callerId) == nil else { throw CallerRegistrationError.callerExists(callerId) }
            state.callers.append(StoredCaller(caller: caller))
            state.keys.append(
                StoredKey(
                    keyId: key.keyId, callerId: callerId, secretHash: key.secretHash, createdAt: now,
                    revokedAt: nil))
        }
        return (caller, key)
    }

    public func issueKey(callerId: String, now: Milliseconds) throws -> APIKey {
        let key = APIKey.generate()
        try state.withLock { state in
            guard state.callerIndex(callerId) != nil else { throw CallerRegistrationError.noCaller(callerId) }
            state.keys.append(
                StoredKey(
                    keyId: key.keyId, callerId: callerId, secretHash: key.secretHash, createdAt: now,
                    revokedAt: nil))
        }
        return key
    }

    public func revokeKey(keyId: String, now: Milliseconds) throws {
        try state.withLock { state in
            guard let index = state.keys.firstIndex(where: { $0.keyId == keyId }) else {
                throw CallerRegistrationError.noKey(keyId)
            }
            guard state.keys[index].revokedAt == nil else { throw CallerRegistrationError.keyAlreadyRevoked(keyId) }
            state.keys[index].revokedAt = now
        }
    }

    public func list(tenant: String? = nil) throws -> [Caller] {
        state.withLock { state in
            state.callers.map(\.caller)
                .filter { tenant == nil || $0.tenant == tenant }
                .sorted { ($0.createdAt, $0.callerId) < ($1.createdAt, $1.callerId) }
        }
    }

    public func caller(_ callerId: String, tenant: String? = nil) throws -> Caller? {
        state.withLock { state in
            state.callerIndex(callerId).map { state.callers[$0].caller }.flatMap { tenant == nil || $0.tenant == tenant ? $0 : nil }
        }
    }

    public func setQuota(callerId: String, rate: Double?, burst: Int?) throws -> Caller {
        try Caller.checkQuota(rate: rate, burst: burst)
        return try state.withLock { state in
            guard let index = state.callerIndex(callerId) else { throw CallerRegistrationError.noCaller(callerId) }
            let ceiling = state.ceilings[state.callers[index].caller.tenant] ?? TenantCeiling()
            if let rate { state.callers[index].caller.rate = ceiling.capping(rate: rate) }
            if let burst { state.callers[index].caller.burst = ceiling.capping(burst: burst) }
            return state.callers[index].caller
        }
    }

    public func setTrainingCapture(callerId: String, _ on: Bool) throws -> Caller {
        try state.withLock { state in
            guard let index = state.callerIndex(callerId) else { throw CallerRegistrationError.noCaller(callerId) }
            state.callers[index].caller.trainingCapture = on
            return state.callers[index].caller
        }
    }

    public func keys(callerId: String) throws -> [StoredKey] {
        state.withLock { state in state.keys.filter { $0.callerId == callerId }.sorted { $0.createdAt < $1.createdAt } }
    }

    public func ceiling(tenant: String) throws -> TenantCeiling {
        state.withLock { $0.ceilings[tenant] ?? TenantCeiling() }
    }

    public func setCeiling(_ ceiling: TenantCeiling, tenant: String) throws -> Int {
        try ceiling.check(tenant: tenant)
        return state.withLock { state in
            state.ceilings[tenant] = ceiling.isNone ? nil : ceiling
            var lowered = 0
            for index in state.callers.indices where state.callers[index].caller.tenant == tenant {
                var caller = state.callers[index].caller
                let before = (caller.rate, caller.burst)
                caller.rate = ceiling.capping(rate: caller.rate)
                caller.burst = ceiling.capping(burst: caller.burst)
                if before != (caller.rate, caller.burst) { lowered += 1 }
                state.callers[index].caller = caller
            }
            return lowered
        }
    }

    public func tenants() throws -> [(name: String, production: Int, sandbox: Int)] {
        state.withLock { state in
            var counts: [String: (production: Int, sandbox: Int)] = [:]
            for caller in state.callers.map(\.caller) {
                var count = counts[caller.tenant] ?? (0, 0)
                if caller.environment == .production { count.production += 1 } else { count.sandbox += 1 }
                counts[caller.tenant] = count
            }
            return counts.keys.sorted().map { (name: $0, production: counts[$0]!.production, sandbox: counts[$0]!.sandbox) }
        }
    }

    // MARK: CallerAdministration

    public func callers(tenant: String) throws -> [Caller] { try list(tenant: tenant) }

    public func caller(_ callerId: String, tenant: String) throws -> Caller? {
        try caller(callerId, tenant: Optional(tenant))
    }

    public func updateCaller(
        callerId: String, tenant: String, rate: Double?, burst: Int?, trainingCapture: Bool?,
        completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void
    ) {
        let result: Result<Caller?, StoreFailure> = state.withLock { state in
            guard let index = state.callerIndex(callerId), state.callers[index].caller.tenant == tenant else { return .success(nil) }
            do { try Caller.checkQuota(rate: rate, burst: burst) } catch { return .failure(.unavailable("\(error)")) }
            let ceiling = state.ceilings[tenant] ?? TenantCeiling()
            if let rate { state.callers[index].caller.rate = ceiling.capping(rate: rate) }
            if let burst { state.callers[index].caller.burst = ceiling.capping(burst: burst) }
            if let trainingCapture { state.callers[index].caller.trainingCapture = trainingCapture }
            return .success(state.callers[index].caller)
        }
        completion(result)
    }

    public func resetPenalty(
        callerId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<Bool, StoreFailure>) -> Void
    ) {
        let found: Bool = state.withLock { state in
            guard let index = state.callerIndex(callerId), state.callers[index].caller.tenant == tenant else { return false }
            state.callers[index].penaltyResetAt = time
            return true
        }
        completion(.success(found))
    }

    public func keys(callerId: String, tenant: String) throws -> [StoredKey]? {
        guard try caller(callerId, tenant: Optional(tenant)) != nil else { return nil }
        return try keys(callerId: callerId)
    }

    public func revokeKey(
        callerId: String, keyId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<StoredKey?, StoreFailure>) -> Void
    ) {
        let key: StoredKey? = state.withLock { state in
            guard let index = state.callerIndex(callerId), state.callers[index].caller.tenant == tenant,
                let k = state.keys.firstIndex(where: { $0.keyId == keyId && $0.callerId == callerId })
            else { return nil }
            if state.keys[k].revokedAt == nil { state.keys[k].revokedAt = time }
            return state.keys[k]
        }
        completion(.success(key))
    }

    // MARK: ReportingStatsSource

    public func reportingStats(since: Milliseconds, now: Milliseconds) throws -> [String: ReportingStats] {
        state.withLock { state in
            var result: [String: ReportingStats] = [:]
            for stored in state.callers {
                let start = max(since, stored.penaltyResetAt ?? 0)
                for e in state.evaluations where e.callerId == stored.caller.callerId && e.createdAt >= start {
                    result[e.callerId, default: ReportingStats()]
                        .count(reportedAt: state.reports[e.eventId]?.report.reportedAt, deadline: e.reportConsumptionBy, now: now)
                }
            }
            return result
        }
    }

    // MARK: VelocityHistory

    public func velocityHistoryEnd() throws -> VelocityHistoryEnd {
        state.withLock { state in
            VelocityHistoryEnd(sequence: state.lastSequence, time: (state.evaluations.map(\.createdAt).max() ?? 0) + 1)
        }
    }

    public func velocityEvents(
        after cursor: VelocityHistoryCursor, through end: VelocityHistoryEnd,
        limit: Int
    ) throws -> VelocityHistoryBatch {
        state.withLock { state in
            let ordered = state.evaluations
                .map { (sequence: state.sequences[$0.eventId] ?? 0, evaluation: $0) }
                .filter { $0.sequence <= end.sequence && ($0.evaluation.createdAt, $0.sequence) > (cursor.time, cursor.sequence) }
                .sorted { ($0.evaluation.createdAt, $0.sequence) < ($1.evaluation.createdAt, $1.sequence) }
            let batch = ordered.prefix(limit)
            let events = batch.map { _, e in
                VelocityEvent(
                    environment: e.environment, time: e.createdAt, account: e.subject.account, device: e.subject.device,
                    counterparty: e.subject.counterparty, isPayment: e.category == .payment,
                    value: e.trackedValue, raisedByVelocity: e.raisedByVelocity)
            }
            guard ordered.count > limit, let last = batch.last else { return VelocityHistoryBatch(events: events, next: nil) }
            return VelocityHistoryBatch(
                events: events,
                next: VelocityHistoryCursor(time: last.evaluation.createdAt, sequence: last.sequence))
        }
    }

    // MARK: DecisionReporting

    public func decisionCounts(tenant: String, from: Milliseconds, to: Milliseconds) throws -> [DecisionCount] {
        state.withLock { state in
            var counts: [DecisionCount: Int] = [:]
            for e in state.evaluations where (from..<to).contains(e.createdAt) {
                guard let action = e.decision?.action, let index = state.callerIndex(e.callerId),
                    state.callers[index].caller.tenant == tenant
                else { continue }
                let report = state.reports[e.eventId]?.report
                counts[
                    DecisionCount(
                        callerId: e.callerId, action: action, status: report?.status, intervention: report?.intervention?.kind,
                        response: report?.intervention?.response, evaluations: 0), default: 0] += 1
            }
            return counts.map { key, count in
                var counted = key
                counted.evaluations = count
                return counted
            }
        }
    }

    public func storedDecision(eventId: String) throws -> Decision? {
        state.withLock { state in state.evaluations.first { $0.eventId == eventId }?.decision }
    }

    // MARK: SubjectHistory

    public func modelPerformanceCounts(_ query: ModelPerformanceQuery) throws -> [ModelPerformanceCell] {
        state.withLock { state in
            let callers = Set(
                state.callers.map(\.caller).filter { $0.tenant == query.tenant && $0.environment == query.environment }
                    .map(\.callerId))
            var cells: [ModelPerformanceCell] = []
            for e in state.evaluations
            where callers.contains(e.callerId) && e.environment == query.environment
                && (query.from..<query.to).contains(e.createdAt) && (query.category.map { $0 == e.category } ?? true)
            {
                // A shadow answer takes the label of the evaluation's first served insight of its type.
                let served = e.insights.first { $0.type == InsightType.isLikelyBeingCoached.rawValue }
                for (insight, shadow) in e.insights.map({ ($0, false) }) + e.shadowInsights.map({ ($0, true) })
                where insight.type == InsightType.isLikelyBeingCoached.rawValue {
                    guard case .value(let value, _) = insight.outcome, let version = insight.modelVersion else { continue }
                    let labelled = shadow ? served?.insightId : insight.insightId
                    let label = state.labels.first { $0.label.insightId == labelled && $0.environment == e.environment }
                    cells.append(
                        ModelPerformanceCell(
                            modelVersion: version, category: e.category, value: value,
                            consumption: state.reports[e.eventId]?.report.status,
                            label: label?.label.outcome, count: 1,
                            mature: e.createdAt < query.matureBefore ? 1 : 0,
                            shadow: shadow, scoreBin: insight.scoreBin, source: e.source))
                }
            }
            return ModelPerformanceCell.merged(cells)
        }
    }

    public func subjectHistory(_ query: SubjectHistoryQuery) throws -> SubjectHistoryPage {
        state.withLock { state in
            let hashes = Set(query.hashes)
            let before = query.after.map { ($0.time, $0.sequence) } ?? (.max, .max)
            let carried = state.evaluations
                .map { (sequence: state.sequences[$0.eventId] ?? 0, evaluation: $0) }
                .filter { sequence, e in
                    let hash: [UInt8]? =
                        switch query.kind {
                        case .account: e.subject.account
                        case .device: e.subject.device
                        case .counterparty: e.subject.counterparty
                        }
                    return hash.map(hashes.contains) == true && e.environment == query.environment
                        && state.tenant(ofCaller: e.callerId) == query.tenant && (e.createdAt, sequence) < before
                }
                .sorted { ($0.evaluation.createdAt, $0.sequence) > ($1.evaluation.createdAt, $1.sequence) }
            let page = carried.prefix(query.limit)
            let entries = page.map { _, e in
                SubjectHistoryEntry(
                    eventId: e.eventId, createdAt: e.createdAt, category: e.category, callerId: e.callerId,
                    callerName: state.callerIndex(e.callerId).map { state.callers[$0].caller.name },
                    insights: e.insights.map { insight in
                        let outcome: SubjectHistoryInsight.Outcome =
                            switch insight.outcome {
                            case .value(let value, _): .value(value)
                            case .error(let code, _): .error(code)
                            }
                        return SubjectHistoryInsight(type: insight.type, modelVersion: insight.modelVersion, outcome: outcome)
                    },
                    decision: e.decision?.action)
            }
            guard carried.count > query.limit, let last = page.last else { return SubjectHistoryPage(entries: entries, next: nil) }
            return SubjectHistoryPage(
                entries: entries,
                next: SubjectHistoryCursor(time: last.evaluation.createdAt, sequence: last.sequence))
        }
    }

    // MARK: AuthorizationStore

    public func apply(
        _ request: AuthorizationRequest, for subject: SubjectHashes, now: Milliseconds,
        cooldown: Milliseconds,
        completion: @escaping @Sendable (Result<AuthorizationRecord, StoreFailure>) -> Void
    ) {
        let record: AuthorizationRecord = state.withLock { state in
            let record = AuthorizationRecord.applying(request, over: Self.find(subject, in: state), now: now, cooldown: cooldown)
            for hash in subject.hashes { state.authorizations[Self.key(subject, hash)] = nil }
            state.authorizations[Self.key(subject, subject.hashes[0])] = record
            return record
        }
        completion(.success(record))
    }

    public func record(for subject: SubjectHashes) throws -> AuthorizationRecord? {
        state.withLock { Self.find(subject, in: $0) }
    }

    public func denials() throws -> [StoredDenial] {
        stored { $0.request == .denied }
    }

    public func authorizations(renewedSince since: Milliseconds) throws -> [StoredAuthorization] {
        stored { $0.renewedAt >= since }
    }

    private func stored(where include: (AuthorizationRecord) -> Bool) -> [StoredAuthorization] {
        state.withLock { state in
            state.authorizations.filter { include($0.value) }.map { key, record in
                StoredAuthorization(
                    tenant: key.tenant, environment: key.environment, kind: key.kind, hash: key.hash,
                    request: record.request, effectiveAt: record.effectiveAt, renewedAt: record.renewedAt)
            }
        }
    }

    /// The choice under any of the subject's hashes (`AuthorizationRecord.standing`).
    private static func find(_ subject: SubjectHashes, in state: State) -> AuthorizationRecord? {
        AuthorizationRecord.standing(among: subject.hashes.compactMap { state.authorizations[key(subject, $0)] })
    }

    private static func key(_ subject: SubjectHashes, _ hash: [UInt8]) -> SubjectKey {
        SubjectKey(tenant: subject.tenant, environment: subject.environment, kind: subject.kind, hash: hash)
    }

    // MARK: TrainingVectorSource

    public func trainingVectors(_ query: TrainingExportQuery, _ each: (CapturedVector) throws -> Void) throws {
        let vectors: [CapturedVector] = state.withLock { state in
            state.evaluations.enumerated().compactMap { sequence, e -> (Milliseconds, Int, CapturedVector)? in
                guard let vector = e.trainingVector, e.createdAt >= query.from, e.createdAt < query.until,
                    e.environment == query.environment, query.tenant == nil || vector.tenant == query.tenant
                else { return nil }
                let label = state.labels.first { $0.label.insightId == vector.insightId && $0.environment == e.environment }
                return (
                    e.createdAt, sequence,
                    CapturedVector(
                        features: vector.features, category: e.category.rawValue,
                        modelVersion: vector.modelVersion, createdAt: e.createdAt,
                        label: label?.label.outcome)
                )
            }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        }
        for vector in vectors { try each(vector) }
    }

    // MARK: RetentionPurge

    public func purgeBatch(
        olderThan cutoff: Milliseconds, trainingVectorsOlderThan trainingCutoff: Milliseconds,
        completion: @escaping @Sendable (Result<RetentionReport, StoreFailure>) -> Void
    ) {
        let report: RetentionReport = state.withLock { state in
            var report = RetentionReport()
            let expired = Set(state.evaluations.filter { $0.createdAt < cutoff }.prefix(batchSize).map(\.eventId))
            report.trainingVectors = state.evaluations.filter { expired.contains($0.eventId) && $0.trainingVector != nil }.count
            for i in state.evaluations.indices
            where !expired.contains(state.evaluations[i].eventId)
                && state.evaluations[i].trainingVector != nil && state.evaluations[i].createdAt < trainingCutoff
            {
                state.evaluations[i].trainingVector = nil
                report.trainingVectors += 1
            }
            state.evaluations.removeAll { expired.contains($0.eventId) }
            for id in expired { state.sequences[id] = nil }
            for id in expired { state.reports[id] = nil }
            report.evaluations = expired.count
            report.labels = Self.removeBatch(from: &state.labels, limit: batchSize) { $0.receivedAt < cutoff }
            let submissions = state.submissions.filter { $0.value.createdAt < cutoff }.prefix(batchSize).map(\.key)
            for key in submissions { state.submissions[key] = nil }
            report.labelSubmissions = submissions.count
            let authorizations = state.authorizations.filter { $0.value.renewedAt < cutoff }.prefix(batchSize).map(\.key)
            for key in authorizations { state.authorizations[key] = nil }
            report.authorizations = authorizations.count
            report.receiptHeads = Self.removeBatch(from: &state.heads, limit: batchSize) { $0.signed.head.time < cutoff }
            return report
        }
        completion(.success(report))
    }

    /// Removes up to `limit` elements matching `expired`; answers how many.
    private static func removeBatch<T>(from array: inout [T], limit: Int, _ expired: (T) -> Bool) -> Int {
        var removed = 0
        array.removeAll { element in
            guard removed < limit, expired(element) else { return false }
            removed += 1
            return true
        }
        return removed
    }

    // MARK: SubjectErasure

    public func erase(
        _ subject: ErasedSubject,
        completion: @escaping @Sendable (Result<SubjectErasureReport, StoreFailure>) -> Void
    ) {
        let report: SubjectErasureReport = state.withLock { state in
            var report = SubjectErasureReport()
            for i in state.evaluations.indices
            where state.tenant(ofCaller: state.evaluations[i].callerId) == subject.tenant
                && subject.environments.contains(state.evaluations[i].environment)
            {
                var hashed = state.evaluations[i].subject
                if let hash = hashed.account, subject.account.contains(hash) { hashed.account = nil }
                if let hash = hashed.device, subject.device.contains(hash) { hashed.device = nil }
                if let hash = hashed.counterparty, subject.counterparty.contains(hash) { hashed.counterparty = nil }
                if hashed != state.evaluations[i].subject {
                    state.evaluations[i].subject = hashed
                    report.evaluations += 1
                    if state.evaluations[i].trainingVector != nil {
                        state.evaluations[i].trainingVector = nil
                        report.trainingVectors += 1
                    }
                }
            }
            let erased = state.authorizations.keys.filter { key in
                key.tenant == subject.tenant && subject.environments.contains(key.environment)
                    && subject.hashes(key.kind.identifierKind).contains(key.hash)
            }
            for key in erased { state.authorizations[key] = nil }
            report.authorizations = erased.count
            return report
        }
        completion(.success(report))
    }
}

// MARK: InterventionCatalog

extension InMemoryStore {
    public func templates(tenant: String, environment: Environment) throws -> [InterventionTemplate] {
        state.withLock { state in
            state.templates.filter { $0.tenant == tenant && $0.environment == environment }
                .sorted { ($0.id, $0.version) < ($1.id, $1.version) }
        }
    }

    public func add(
        _ template: InterventionTemplate, completion: @escaping @Sendable (Result<TemplateAddResult, StoreFailure>) -> Void
    ) {
        let result: TemplateAddResult = state.withLock { state in
            if let existing = state.templates.first(where: {
                $0.tenant == template.tenant && $0.environment == template.environment && $0.reference == template.reference
            }) {
                return existing.sameContent(as: template) ? .unchanged(existing) : .conflict(existing)
            }
            state.templates.append(template)
            return .added(template)
        }
        completion(.success(result))
    }

    public func retire(
        tenant: String, environment: Environment, reference: TemplateReference, at time: Milliseconds,
        completion: @escaping @Sendable (Result<InterventionTemplate?, StoreFailure>) -> Void
    ) {
        let result: InterventionTemplate? = state.withLock { state in
            guard
                let i = state.templates.firstIndex(where: {
                    $0.tenant == tenant && $0.environment == environment && $0.reference == reference
                })
            else { return nil }
            if state.templates[i].retiredAt == nil { state.templates[i].retiredAt = time }
            return state.templates[i]
        }
        completion(.success(result))
    }
}
