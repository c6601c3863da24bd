import CoachingModel
import InsightDomain

/// How each model version performs on the admin's tenant's own traffic (docs/operations.md
/// "Model performance"): the store's counts over a period of whole UTC days, turned into a report
/// with each figure's sample size and Wilson interval.
public struct ModelPerformanceService: Sendable {
    /// The longest period one report covers, in days: a report reads every evaluation of its
    /// period, so its cost grows with it (docs/performance.md, "Model performance report").
    public static let maxDays = 92

    let source: any ModelPerformanceSource
    let clock: any Clock
    /// `INSIGHTD_LABEL_MATURITY_DAYS`: how long labels take to arrive.
    public let maturityDays: Int
    /// Reports run here, never on an event loop (one reads a whole period), shared fairly between
    /// tenants: one report of a tenant at a time, the tenants waiting taking turns.
    let queue: FairShareQueue
    /// The loaded models, whose manifests give each version's reference distribution (drift);
    /// nil: no drift figures.
    let models: InsightModels?

    /// Reports that may run at once on an instance, each of another tenant.
    public static let concurrentReports = 2

    public init(
        source: any ModelPerformanceSource, clock: any Clock, maturityDays: Int, models: InsightModels? = nil,
        concurrentReports: Int = Self.concurrentReports
    ) {
        self.models = models
        self.source = source
        self.clock = clock
        self.maturityDays = maturityDays
        queue = FairShareQueue(label: "insightd.model-performance", concurrency: concurrentReports)
    }

    /// What was asked, as the report repeats it.
    public struct Period: Sendable, Equatable {
        public var environment: Environment
        /// The first day and the last day (inclusive), as YYYY-MM-DD.
        public var from: String
        public var to: String
        public var category: OperationCategory?

        public init(environment: Environment, from: String, to: String, category: OperationCategory?) {
            self.environment = environment
            self.from = from
            self.to = to
            self.category = category
        }
    }

    /// A report with what it covers.
    public struct Answer: Sendable, Equatable {
        public var period: Period
        public var report: ModelPerformanceReport
        /// Evaluations created before this were mature when the report was made.
        public var matureBefore: Milliseconds
        public var maturityDays: Int
    }

    /// The query for `period` of `admin`'s tenant at `now`; throws `.otherEnvironment` for a period
    /// of the environment the admin's key is not of, `.invalid` for a day that is not a date, a
    /// period that ends before it starts or is longer than `maxDays`.
    public func query(_ period: Period, of admin: Caller, now: Milliseconds) throws(Rejection) -> ModelPerformanceQuery {
        guard period.environment == admin.environment else { throw .otherEnvironment(admin.environment) }
        guard let from = Timestamp.parseDate(period.from) else { throw .invalid(field: "from", detail: "must be a date as YYYY-MM-DD") }
        guard let to = Timestamp.parseDate(period.to) else { throw .invalid(field: "to", detail: "must be a date as YYYY-MM-DD") }
        guard to >= from else { throw .invalid(field: "to", detail: "must not be before from") }
        guard (to - from) / Self.day < Milliseconds(Self.maxDays) else {
            throw .invalid(field: "to", detail: "must be within \(Self.maxDays) days of from (both included)")
        }
        return ModelPerformanceQuery(
            tenant: admin.tenant, environment: period.environment, from: from, to: to + Self.day,
            category: period.category, matureBefore: now - Milliseconds(maturityDays) * Self.day)
    }

    static let day: Milliseconds = 86_400_000

    /// The report of `period` for `admin`'s tenant, made on the service's queue in the tenant's
    /// turn; `completion` runs through `resume`.
    public func report(
        _ period: Period, of admin: Caller, resume: @escaping Resume,
        completion: @escaping Completion<Answer>
    ) throws(Rejection) {
        let query = try query(period, of: admin, now: clock.now())
        let source = self.source, maturityDays = self.maturityDays, references = Self.references(models?.snapshot)
        queue.submit(tenant: admin.tenant) {
            let result: Result<Answer, Rejection>
            do {
                let cells = try source.modelPerformanceCounts(query)
                result = .success(
                    Answer(
                        period: period, report: ModelPerformanceReport(cells: cells, query: query, references: references),
                        matureBefore: query.matureBefore, maturityDays: maturityDays))
            } catch {
                result = .failure(.unreadable(.evaluations))
            }
            resume { completion(result) }
        }
    }

    /// The reference shares of every loaded version that has them, by version and category.
    static func references(_ registry: ModelRegistry?) -> ScoreReferences {
        var out: ScoreReferences = [:]
        for model in registry?.versions ?? [] {
            guard let reference = model.reference else { continue }
            var byCategory: [OperationCategory: ReferenceShares] = [:]
            for (name, bins) in reference.bins {
                guard let category = OperationCategory(rawValue: name) else { continue }
                var byPlatform: [ClientPlatform: [Double]] = [:]
                for (platform, shares) in bins.platformShares {
                    if let platform = ClientPlatform(rawValue: platform) { byPlatform[platform] = shares }
                }
                byCategory[category] = ReferenceShares(shares: bins.shares, byPlatform: byPlatform)
            }
            out[model.version] = byCategory
        }
        return out
    }
}
