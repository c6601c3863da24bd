import Dispatch
import InsightDomain
import Synchronization

/// One implementation of every store port, fresh and empty, as a contract case uses it.
public struct StoreSet {
    public var ledger: any EvaluationLedger
    public var credentials: any CredentialDirectory
    public var registration: any CallerRegistration
    public var administration: any CallerAdministration
    public var authorizations: any AuthorizationStore
    public var reporting: any ReportingStatsSource
    public var velocity: any VelocityHistory
    public var history: any SubjectHistory
    public var performance: any ModelPerformanceSource
    public var retention: any RetentionPurge
    public var erasure: any SubjectErasure
    public var decisions: any DecisionReporting
    public var training: any TrainingVectorSource
    public var receiptLog: any ReceiptLog
    public var interventions: any InterventionCatalog
    /// The issuer the ledger's writer signs heads with (its instance and keys).
    public var receipts: ReceiptIssuer
    /// Releases the stores (stops writers, deletes files).
    public var close: () -> Void

    public init(
        ledger: any EvaluationLedger, credentials: any CredentialDirectory, registration: any CallerRegistration,
        administration: any CallerAdministration, authorizations: any AuthorizationStore,
        reporting: any ReportingStatsSource, velocity: any VelocityHistory, history: any SubjectHistory,
        retention: any RetentionPurge, erasure: any SubjectErasure, decisions: any DecisionReporting,
        performance: any ModelPerformanceSource, training: any TrainingVectorSource,
        receiptLog: any ReceiptLog, interventions: any InterventionCatalog, receipts: ReceiptIssuer,
        close: @escaping () -> Void = {}
    ) {
        self.ledger = ledger
        self.credentials = credentials
        self.registration = registration
        self.administration = administration
        self.authorizations = authorizations
        self.reporting = reporting
        self.velocity = velocity
        self.history = history
        self.performance = performance
        self.retention = retention
        self.erasure = erasure
        self.decisions = decisions
        self.training = training
        self.receiptLog = receiptLog
        self.interventions = interventions
        self.receipts = receipts
        self.close = close
    }
}

/// A broken expectation of the contract: the case's name, the line and what differed.
public struct ContractFailure: Error, CustomStringConvertible {
    public var description: String
}

/// One behaviour every implementation of the store ports must have.
public struct ContractCase: Sendable {
    public let area: StoreContract.Area
    public let name: String
    let body: @Sendable (StoreSet) throws -> Void
}

/// The behaviour of the store ports (`StorePorts.swift`, `AuthorizationStore`,
/// `ReportingStatsSource`), stated once for every backend: today's SQLite stores and the
/// in-memory fakes pass it, and so must any other. Each case runs on a fresh, empty store set.
public enum StoreContract {
    public enum Area: String, Sendable, CaseIterable {
        case consumption, interventions, labels, credentials, registration, administration, authorization, reporting, velocity, history,
            retention,
            erasure,
            decisions, performance, training, receipts, retries
    }

    /// Runs every case of every area, each on a store set from `make`; answers the failures, each
    /// naming its area and case (empty: all passed).
    public static func runAll(make: () throws -> StoreSet) -> [String] {
        Area.allCases.flatMap { run($0, make: make) }
    }

    /// Runs every case of `area`, each on a store set from `make`; answers the failures (empty: all passed).
    public static func run(_ area: Area, make: () throws -> StoreSet) -> [String] {
        var failures: [String] = []
        for c in cases where c.area == area {
            do {
                let stores = try make()
                defer { stores.close() }
                try c.body(stores)
            } catch {
                failures.append("\(area.rawValue): \(c.name): \(error)")
            }
        }
        return failures
    }

    public static var cases: [ContractCase] {
        consumptionCases + interventionCases + labelCases + labelRuleCases + credentialCases + registrationCases + registrationRuleCases
            + administrationCases
            + authorizationCases + authorizationRuleCases + reportingCases + velocityCases + historyCases + retentionCases + erasureCases
            + decisionCases
            + performanceCases + shadowCases + trainingCases + receiptCases + retryCases + retryRuleCases
    }
}

// MARK: - Expectations

func expect(_ condition: Bool, _ message: @autoclosure () -> String = "", line: UInt = #line) throws {
    guard condition else { throw ContractFailure(description: "StoreContract line \(line): \(message())") }
}

func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: String = "", line: UInt = #line) throws {
    guard actual == expected else {
        throw ContractFailure(description: "StoreContract line \(line): \(what) got \(actual), expected \(expected)")
    }
}

func expectThrows<T>(_ what: String, line: UInt = #line, _ body: () throws -> T) throws {
    do {
        _ = try body()
    } catch {
        return
    }
    throw ContractFailure(description: "StoreContract line \(line): \(what) did not throw")
}

/// Waits for an asynchronous store operation (10 s at most).
func wait<T: Sendable>(
    line: UInt = #line,
    _ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void
) throws -> Result<T, StoreFailure> {
    let box = Mutex<Result<T, StoreFailure>?>(nil)
    let done = DispatchSemaphore(value: 0)
    body { result in
        box.withLock { $0 = result }
        done.signal()
    }
    guard done.wait(timeout: .now() + 10) == .success, let result = box.withLock({ $0 }) else {
        throw ContractFailure(description: "StoreContract line \(line): no completion within 10 s")
    }
    return result
}

/// Waits for an operation that must succeed.
@discardableResult
func value<T: Sendable>(
    line: UInt = #line,
    _ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void
) throws -> T {
    switch try wait(line: line, body) {
    case .success(let value): return value
    case .failure(let failure):
        throw ContractFailure(description: "StoreContract line \(line): failed with \(failure)")
    }
}

// MARK: - Fixtures

extension StoreSet {
    @discardableResult
    func caller(
        _ id: String, tenant: String = Tenant.defaultName, environment: Environment = .production,
        roles: Set<Role> = [.evaluate, .labels], now: Milliseconds = 1
    ) throws -> (Caller, APIKey) {
        try registration.create(
            name: "caller \(id)", tenant: tenant, environment: environment, roles: roles,
            rate: 10, burst: 20, now: now, callerId: id)
    }

    /// Registers a sandbox caller `id` with these values (valid by default), as a case that
    /// varies one of them calls it.
    @discardableResult
    func register(
        name: String = "x", tenant: String = "default", roles: Set<Role> = [.evaluate], rate: Double = 1,
        burst: Int = 1, id: String = "c1"
    ) throws -> (Caller, APIKey) {
        try registration.create(
            name: name, tenant: tenant, environment: .sandbox, roles: roles, rate: rate, burst: burst,
            now: 1, callerId: id)
    }

    /// The writer's chain of `tenant`'s answers in `environment` (the evaluations `record` stores
    /// are tenant `default`'s in production unless told otherwise).
    func chain(tenant: String = Tenant.defaultName, environment: Environment = .production) -> ReceiptChain {
        ReceiptChain(instance: receipts.instance, tenant: tenant, environment: environment.rawValue)
    }

    func record(
        _ id: String, caller: String = "c1", environment: Environment = .production,
        insights: [String]? = nil, created: Milliseconds = 1_000, due: Milliseconds = 2_000,
        account: [UInt8]? = [1, 2, 3], category: OperationCategory = .payment,
        tracked: InsightValue? = .high, raisedByVelocity: Bool = false, decision: Decision? = nil,
        vector: TrainingVector? = nil, line: UInt = #line
    ) throws {
        let evaluation = Self.evaluation(
            id, caller: caller, environment: environment, insights: insights, created: created,
            due: due, account: account, category: category, tracked: tracked,
            raisedByVelocity: raisedByVelocity, decision: decision, vector: vector)
        try value(line: line) { ledger.record(evaluation, answer: Array(evaluation.eventId.utf8), completion: $0) }
    }

    /// The evaluation `record` stores.
    static func evaluation(
        _ id: String, caller: String = "c1", environment: Environment = .production,
        insights: [String]? = nil, created: Milliseconds = 1_000, due: Milliseconds = 2_000,
        account: [UInt8]? = [1, 2, 3], category: OperationCategory = .payment,
        tracked: InsightValue? = .high, raisedByVelocity: Bool = false, decision: Decision? = nil,
        vector: TrainingVector? = nil, tenant: String = Tenant.defaultName
    ) -> EvaluationRecord {
        let ids = insights ?? ["\(id)-i0"]
        var evaluation = EvaluationRecord(
            eventId: id, callerId: caller, environment: environment, category: category, createdAt: created,
            reportConsumptionBy: due, subject: HashedSubject(account: account, device: [9], counterparty: [4], keyId: "k1"),
            insights: ids.map {
                InsightRecord(
                    insightId: $0, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                    newestModelVersion: "2.0", outcome: .value(.high, reasons: ["activeCallDuringSession"]))
            },
            trackedValue: tracked, raisedByVelocity: raisedByVelocity, decision: decision, trainingVector: vector)
        evaluation.tenant = tenant
        return evaluation
    }

    func report(
        _ id: String, caller: String = "c1", environment: Environment = .production,
        status: ConsumptionStatus = .usedIncreasedFriction, ids: [String] = [],
        at: Milliseconds = 1_500, tenant: String = Tenant.defaultName, intervention: RecordedIntervention? = nil,
        line: UInt = #line
    ) throws -> ConsumptionResult {
        try value(line: line) {
            ledger.report(
                ConsumptionReport(
                    eventId: id, callerId: caller, environment: environment, status: status,
                    insightIdsUsed: ids, reportedAt: at, tenant: tenant, intervention: intervention), completion: $0)
        }
    }

    func label(
        _ items: [Label?], caller: String = "ops", tenant: String = Tenant.defaultName,
        environment: Environment = .production, key: String = "k1", body: String = "b1",
        at: Milliseconds = 5_000, line: UInt = #line
    ) throws -> LabelSubmissionResult {
        try value(line: line) {
            ledger.submit(
                LabelSubmission(
                    callerId: caller, tenant: tenant, environment: environment, items: items,
                    idempotencyKeyHash: Array(key.utf8), bodyHash: Array(body.utf8),
                    receivedAt: at), completion: $0)
        }
    }

    func authorize(
        _ request: AuthorizationRequest, _ subject: SubjectHashes, now: Milliseconds,
        cooldown: Milliseconds = 500, line: UInt = #line
    ) throws -> AuthorizationRecord {
        try value(line: line) { authorizations.apply(request, for: subject, now: now, cooldown: cooldown, completion: $0) }
    }

    func erase(_ subject: ErasedSubject, line: UInt = #line) throws -> SubjectErasureReport {
        try value(line: line) { erasure.erase(subject, completion: $0) }
    }

    func purgeAll(olderThan cutoff: Milliseconds) throws -> RetentionReport {
        var total = RetentionReport()
        while true {
            let batch = try value { retention.purgeBatch(olderThan: cutoff, completion: $0) }
            if batch.isEmpty { return total }
            total.add(batch)
        }
    }
}

func fraud(_ id: String, _ outcome: LabelOutcome = .confirmedFraud) -> Label {
    Label(
        insightId: id, outcome: outcome, fraudType: outcome == .confirmedFraud ? .techSupportScam : nil,
        discoveredAt: "2027-01-15")
}

func subject(
    _ hashes: [[UInt8]], tenant: String = Tenant.defaultName, environment: Environment = .production,
    kind: AuthorizableKind = .account, key: String = "k1"
) -> SubjectHashes {
    SubjectHashes(tenant: tenant, environment: environment, kind: kind, hashes: hashes, activeKeyId: key)
}

func contractCase(
    _ area: StoreContract.Area, _ name: String,
    _ body: @escaping @Sendable (StoreSet) throws -> Void
) -> ContractCase {
    ContractCase(area: area, name: name, body: body)
}
