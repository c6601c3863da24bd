import Dispatch
import InsightDomain
import Locking
import Telemetry

/// Recounts consumption reporting from the store into the rate limiter every
/// `INSIGHTD_COMPLIANCE_REFRESH` seconds, off the request path, so penalties follow what callers
/// report; a costly recount waits longer before the next (`delay`). With several instances only
/// the one leading the periodic jobs recounts (the limits it updates are shared).
final class ComplianceRecount: Sendable {
    private let limiter: any RateLimits
    private let source: any ReportingStatsSource
    private let leadership: any JobLeadership
    private let callers: @Sendable () throws -> [Caller]
    private let interval: Int
    private let logger: Logger
    private let overdueReports: GaugeFamily
    private let duration: GaugeFamily
    /// When the next recount may run (`DispatchTime` nanoseconds).
    private let next = Locked<UInt64>(0)

    /// Share of one core the periodic recount may take. The recount reads every evaluation of the
    /// counting window (an hour by default): at 1,000 evaluations per second that is 3.6 million
    /// rows, seconds of work that would otherwise repeat every interval.
    static let budget = 0.05

    init(
        limiter: any RateLimits, source: any ReportingStatsSource, leadership: any JobLeadership,
        callers: @escaping @Sendable () throws -> [Caller], interval: Int, logger: Logger, metrics: MetricsRegistry
    ) {
        self.limiter = limiter
        self.source = source
        self.leadership = leadership
        self.callers = callers
        self.interval = interval
        self.logger = logger
        overdueReports = metrics.gauge(
            "insightd_consumption_overdue",
            help: "Evaluations past their reportConsumptionBy without a report, in the counting window.",
            labels: ["environment"])
        duration = metrics.gauge(
            "insightd_compliance_recount_seconds",
            help: "Duration of the last recount of consumption reporting from the store.", labels: [])
    }

    /// Seconds until the next recount after one that took `duration`: the configured interval,
    /// or longer when the recount is so costly that it would exceed its budget of one core.
    static func delay(interval: Int, lastDuration duration: Double) -> Double {
        max(Double(interval), duration / budget)
    }

    /// The recount's schedule: every interval, the first one interval after its start.
    func periodicJob() -> PeriodicJob {
        PeriodicJob("insightd.compliance", firstAfter: Double(interval), every: Double(interval)) { self.recountIfDue() }
    }

    private func recountIfDue() {
        let started = DispatchTime.now().uptimeNanoseconds
        guard started >= next.withLock({ $0 }), leadership.tryLead() else { return }
        recount()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        duration.set(to: seconds)
        let delay = Self.delay(interval: interval, lastDuration: seconds)
        // A little early, so that a timer tick at the interval is not missed by microseconds.
        next.withLock { $0 = started + UInt64((delay - 0.5) * 1e9) }
    }

    /// Reads the reporting counts from the store into the rate limiter now.
    func recount() {
        do {
            try limiter.refresh(from: source)
            var overdue: [Environment: Int] = [.production: 0, .sandbox: 0]
            for caller in try callers() {
                overdue[caller.environment, default: 0] += limiter.view(caller).stats.overdue
            }
            for (environment, count) in overdue { overdueReports.set(environment.rawValue, to: Double(count)) }
        } catch {
            logger.error("cannot count consumption reporting", [("error", .string("\(error)"))])
        }
    }
}
