import CoachingModel
import Foundation
import InsightDomain
import InsightServices
import InsightStoreFakes
import InsightTesting
import Synchronization
import Telemetry
import XCTest

/// Every use case wired as the daemon's composition root wires them, over one in-memory store
/// (behind a `StoreProbe` that records what reaches it and can be told to fail), a manual
/// clock, and the real limiter, denial index, hash keys, velocity tracker, escalation policy
/// and metrics registry. Stores complete before they return, so each use case is driven to
/// its end synchronously (`completed`).
final class Fixture {
    /// What a test may change before the use cases are built.
    struct Options {
        var models: ModelRegistry?
        var rateLimits = RateLimitSettings()
        var escalation = EscalationPolicy.defaults
        /// docs/api.md "Subject authorization": 72 hours by default.
        var cooldown: Milliseconds = 72 * 3_600_000
        /// docs/rate-limits.md "Settings": 15 minutes by default.
        var consumptionGrace: Milliseconds = 15 * 60_000
        var denialCapacity = 1_000_000
        var credentialCacheSeconds = 0.0
    }

    /// The fixed hash key every fixture hashes with (tenant `default` uses it as it is).
    static let hashKey = [UInt8](repeating: 0x5A, count: 32)

    let store: StoreProbe
    let clock = ManualClock()
    let registry = MetricsRegistry()
    let limiter: RateLimiter
    let denials: DenialIndex
    let hashKeys: HashKeys
    let velocity: VelocityTracker
    let models: InsightModels
    let useCases: UseCases
    let options: Options
    /// The erasures' audit records, in order.
    let audits = AuditRecords()
    private var callers = 0

    init(_ configure: (inout Options) -> Void = { _ in }) {
        var options = Options()
        configure(&options)
        self.options = options
        store = StoreProbe(InMemoryStore())
        limiter = RateLimiter(settings: options.rateLimits, clock: clock)
        denials = DenialIndex(capacity: options.denialCapacity)
        hashKeys = HashKeys(try! HashKeyring(keys: [Self.hashKey]))
        velocity = VelocityTracker(clock: clock)
        models = InsightModels(options.models)
        let metrics = ServiceMetrics(registry: registry)
        let authorization = AuthorizationService(
            store: store, denials: denials, hashKeys: hashKeys, clock: clock,
            metrics: metrics, cooldown: options.cooldown)
        let audits = self.audits
        var useCases = UseCases(
            credentials: CredentialCheck(directory: store, clock: clock, cacheSeconds: options.credentialCacheSeconds),
            quota: QuotaGate(limiter: limiter, metrics: metrics),
            evaluation: EvaluationService(
                ledger: store, models: models, hashKeys: hashKeys, clock: clock, limiter: limiter,
                denials: denials, velocity: velocity, escalation: options.escalation,
                metrics: metrics, consumptionGrace: options.consumptionGrace),
            consumption: ConsumptionService(ledger: store, clock: clock, metrics: metrics),
            labels: LabelService(ledger: store, clock: clock, metrics: metrics),
            authorization: authorization,
            admin: CallerAdminService(administration: store, limiter: limiter, clock: clock),
            subjects: SubjectService(
                history: store, erasure: store, authorization: authorization, denials: denials,
                velocity: velocity, hashKeys: hashKeys, metrics: metrics,
                velocitySettle: .milliseconds(20)
            ) { audits.append($0) },
            performance: ModelPerformanceService(source: store.inner, clock: clock, maturityDays: 60),
            clock: clock)
        useCases.interventions = InterventionCatalogService(catalog: store.inner, clock: clock)
        self.useCases = useCases
    }

    // MARK: Callers

    /// A new caller in the store, and its key.
    func register(
        _ roles: Set<Role> = [.evaluate], tenant: String = Tenant.defaultName,
        environment: Environment = .production, rate: Double = 10_000, burst: Int = 10_000
    ) -> (Caller, APIKey) {
        callers += 1
        return try! store.inner.create(
            name: "caller \(callers)", tenant: tenant, environment: environment, roles: roles,
            rate: rate, burst: burst, now: clock.now(), callerId: "caller_\(callers)")
    }

    /// A new caller in the store.
    func caller(
        _ roles: Set<Role> = [.evaluate], tenant: String = Tenant.defaultName,
        environment: Environment = .production, rate: Double = 10_000, burst: Int = 10_000
    ) -> Caller {
        register(roles, tenant: tenant, environment: environment, rate: rate, burst: burst).0
    }

    // MARK: Driving the use cases as the API does

    /// Evaluates as `POST /v1/evaluations` does (the use case takes the caller's token).
    func evaluate(
        _ request: EvaluationRequest, by caller: Caller,
        override: SandboxOverride? = nil
    ) throws(Rejection) -> EvaluationRecord {
        try completed { done throws(Rejection) in
            try useCases.evaluation.evaluate(
                request, by: caller, override: override, answer: PlainAnswer(),
                resume: { $0() }, completion: done)
        }.record!
    }

    /// `caller`'s consumption report on evaluation `eventId`, naming the insights in `used`.
    func report(_ status: ConsumptionStatus, on eventId: String, used: [String] = [], by caller: Caller) throws(Rejection) {
        try completed { done throws(Rejection) in
            try useCases.consumption.report(
                status, insightIdsUsed: used, eventId: eventId, by: caller, resume: { $0() },
                completion: done)
        }
    }

    /// A label submission by `caller` (without the quota token the API takes first).
    func label(_ items: [Label?], key: String, body: String, by caller: Caller) throws(Rejection) -> LabelService.Outcome {
        try completed { done in
            useCases.labels.submit(
                items, idempotencyKey: key, body: Array(body.utf8), by: caller, resume: { $0() },
                completion: done)
        }
    }

    /// A person's choice for an account (or a device).
    @discardableResult
    func choose(
        _ request: AuthorizationRequest, _ identifier: String, kind: AuthorizableKind = .account,
        by caller: Caller
    ) throws(Rejection) -> AuthorizationService.State {
        try completed { done throws(Rejection) in
            try useCases.authorization.apply(
                request, kind: kind, identifier: identifier, by: caller, resume: { $0() },
                completion: done)
        }
    }

    /// Runs a use case that completes through a callback, and returns what it completed with.
    /// The fakes answer before they return, so a use case that has not completed is a failure.
    func completed<T: Sendable>(
        file: StaticString = #filePath, line: UInt = #line,
        _ start: (@escaping Completion<T>) throws(Rejection) -> Void
    ) throws(Rejection) -> T {
        let outcome = ResultBox<T>()
        try start { outcome.set($0) }
        guard let result = outcome.value else {
            XCTFail("the use case did not complete", file: file, line: line)
            throw Rejection.store(.unavailable("the use case did not complete"))
        }
        return try result.get()
    }

    // MARK: Reading what happened

    /// The value of counter `name` for the series whose labels include `labels` (0 when none).
    func counter(_ name: String, _ labels: [String: String] = [:]) -> Double {
        var total = 0.0
        for line in registry.render().split(separator: "\n") where !line.hasPrefix("#") {
            let head = line.prefix { $0 != " " }
            guard head == name || head.hasPrefix(name + "{") else { continue }
            var series: [String: String] = [:]
            if let open = head.firstIndex(of: "{"), let close = head.lastIndex(of: "}") {
                for pair in head[head.index(after: open)..<close].split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    series[String(parts[0])] = String(parts[1].dropFirst().dropLast())
                }
            }
            if labels.allSatisfy({ series[$0.key] == $0.value }) { total += Double(line.split(separator: " ").last!) ?? 0 }
        }
        return total
    }

    /// The keyed hash of `identifier` under the active key of `tenant`.
    func hash(_ identifier: String, _ kind: IdentifierKind, tenant: String = Tenant.defaultName) -> [UInt8] {
        hashKeys.current(tenant: tenant).active.hash(identifier, kind: kind)
    }

    // MARK: Requests

    static let coaching = InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1)

    static func request(
        account: String? = nil, device: String? = nil, counterparty: String? = nil,
        category: OperationCategory = .payment, insights: [InsightRequest] = [coaching],
        interaction: InteractionInput = .none, requestId: String? = nil
    ) -> EvaluationRequest {
        EvaluationRequest(
            requestId: requestId, category: category, insights: insights,
            subject: RawSubject(account: account, device: device, counterparty: counterparty),
            interaction: interaction)
    }

    /// A label of `insightId`.
    static func label(
        _ insightId: String, _ outcome: LabelOutcome = .confirmedFraud,
        _ fraudType: FraudType? = .authorityImpersonation
    ) -> Label {
        Label(
            insightId: insightId, outcome: outcome, fraudType: outcome == .confirmedFraud ? fraudType : nil,
            discoveredAt: "2026-11-15")
    }

    // MARK: Models and sessions

    /// The repository's committed models (`models/`: 1.0 and 2.0, 2.0 current).
    static let modelsDirectory = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("models").path

    static func committedModels() throws -> ModelRegistry { try committed.get() }

    /// Loaded once for the whole suite (the registry is an immutable value).
    private static let committed = Result { () throws(ModelLoadError) in try ModelRegistry.load(directory: modelsDirectory) }

    /// Authority impersonation as docs/features.md describes it: a call begun before the session,
    /// the phone at the ear, digits typed in dictated bursts, a long hesitation before submit.
    static let coachedSession: InteractionInput = {
        var events = [
            InteractionEvent(t: 0, type: .sessionStart), InteractionEvent(t: 200, type: .proximityNear),
            InteractionEvent(t: 9000, type: .fieldFocus, field: .payee)
        ]
        var t: Int64 = 9000
        for burst in 0..<6 {
            for _ in 0..<4 { t += 180; events.append(InteractionEvent(t: t, type: .keyDown, field: .payee)) }
            t += burst % 2 == 0 ? 4200 : 3600
        }
        t += 2000; events.append(InteractionEvent(t: t, type: .fieldFocus, field: .amount))
        for _ in 0..<4 { t += 900; events.append(InteractionEvent(t: t, type: .keyDown, field: .amount)) }
        t += 2500; events.append(InteractionEvent(t: t, type: .delete, field: .amount))
        t += 1500; events.append(InteractionEvent(t: t, type: .keyDown, field: .amount))
        t += 38000; events.append(InteractionEvent(t: t, type: .submit))
        return .events(
            events,
            DeviceFacts(
                activeCall: true, callStartedBeforeSession: true, screenSharing: false,
                remoteAccessApp: false))
    }()

    /// A routine payment: quick, steady typing, no call.
    static let genuineSession: InteractionInput = {
        var events = [InteractionEvent(t: 0, type: .sessionStart), InteractionEvent(t: 1400, type: .fieldFocus, field: .payee)]
        var t: Int64 = 1400
        for i in 0..<22 { t += 140 + Int64(i % 3) * 25; events.append(InteractionEvent(t: t, type: .keyDown, field: .payee)) }
        t += 900; events.append(InteractionEvent(t: t, type: .fieldFocus, field: .amount))
        for _ in 0..<3 { t += 160; events.append(InteractionEvent(t: t, type: .keyDown, field: .amount)) }
        t += 1800; events.append(InteractionEvent(t: t, type: .submit))
        return .events(events, DeviceFacts(activeCall: false))
    }()
}

/// What a use case completed with, set from its (Sendable) completion.
final class ResultBox<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, Rejection>?>(nil)
    func set(_ value: Result<T, Rejection>) { result.withLock { $0 = value } }
    var value: Result<T, Rejection>? { result.withLock { $0 } }
}

/// The erasures' audit records, as the use case hands them out.
final class AuditRecords: Sendable {
    private let records = Mutex<[ErasureAudit]>([])
    func append(_ audit: ErasureAudit) { records.withLock { $0.append(audit) } }
    var all: [ErasureAudit] { records.withLock { $0 } }
}

/// Asserts that `body` throws exactly `expected`.
func XCTAssertRejects<T>(
    _ expected: Rejection, _ body: () throws(Rejection) -> T, _ message: String = "",
    file: StaticString = #filePath, line: UInt = #line
) {
    do {
        let value = try body()
        XCTFail("expected \(expected), got \(value) \(message)", file: file, line: line)
    } catch {
        XCTAssertEqual(error, expected, message, file: file, line: line)
    }
}

/// The rejection `body` throws, or nil (with a failure) when it succeeds.
func rejection<T>(_ body: () throws(Rejection) -> T, file: StaticString = #filePath, line: UInt = #line) -> Rejection? {
    do {
        let value = try body()
        XCTFail("expected a rejection, got \(value)", file: file, line: line)
        return nil
    } catch {
        return error
    }
}

/// An answer that is its tenant and event id (and requestId), for tests that need no JSON.
struct PlainAnswer: AnswerWriter {
    func answer(_ record: EvaluationRecord, tenant: String) -> [UInt8] { Array("\(tenant) \(record.eventId)".utf8) }
    func naming(_ answer: [UInt8], eventId: String, requestId: String) -> [UInt8] { answer + Array(" \(requestId)".utf8) }
}
