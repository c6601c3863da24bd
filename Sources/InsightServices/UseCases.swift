import InsightDomain

/// Runs the rest of a use case once a store has answered. The API passes one that continues on
/// the event-loop thread serving the request, so that what follows a commit (metrics, velocity,
/// the answer) runs on the loops in parallel rather than on the store's writer thread; tests
/// pass `{ $0() }`.
public typealias Resume = @Sendable (@escaping @Sendable () -> Void) -> Void

/// What a use case that writes completes with, after the store's answer.
public typealias Completion<T> = @Sendable (Result<T, Rejection>) -> Void

/// Every use case of the API, built once by the composition root.
public struct UseCases: Sendable {
    public var credentials: CredentialCheck
    public var quota: QuotaGate
    public var evaluation: EvaluationService
    public var consumption: ConsumptionService
    public var labels: LabelService
    public var authorization: AuthorizationService
    public var admin: CallerAdminService
    public var subjects: SubjectService
    /// Decisions against consumption reports (the admin view); nil answers `503`.
    public var decisionReports: DecisionReportService?
    public var performance: ModelPerformanceService
    /// The log of receipt heads; nil answers `503`.
    public var receipts: ReceiptLogService?
    /// Each tenant's intervention catalogue (the admin view); nil answers `503`.
    public var interventions: InterventionCatalogService?
    /// The time the use cases read (decoders check dates against it).
    public var clock: any Clock

    public init(
        credentials: CredentialCheck, quota: QuotaGate, evaluation: EvaluationService,
        consumption: ConsumptionService, labels: LabelService, authorization: AuthorizationService,
        admin: CallerAdminService, subjects: SubjectService, performance: ModelPerformanceService,
        clock: any Clock
    ) {
        self.credentials = credentials
        self.quota = quota
        self.evaluation = evaluation
        self.consumption = consumption
        self.labels = labels
        self.authorization = authorization
        self.admin = admin
        self.subjects = subjects
        self.performance = performance
        self.clock = clock
    }
}
