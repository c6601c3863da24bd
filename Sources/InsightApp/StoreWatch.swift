import InsightDomain
import Locking
import Telemetry

/// Tells the operator when a shared store stops answering and when it answers again: one log
/// line each way (not one per refused request) and the gauge `insightd_store_up`, looked at every
/// second. While it is down every request that needs the store is answered `503` and `/readyz`
/// is false; nothing else changes, and the store's connections come back by themselves.
final class StoreWatch: Sendable {
    private let isReachable: @Sendable () -> Bool
    private let unreachableReason: @Sendable () -> String?
    private let logger: Logger
    private let up: Gauge
    private let wasReachable = Locked<Bool>(true)

    /// `unreachableReason` says why, in the line that reports the store unreachable.
    init(
        isReachable: @escaping @Sendable () -> Bool, unreachableReason: @escaping @Sendable () -> String? = { nil },
        metrics: MetricsRegistry, logger: Logger
    ) {
        self.isReachable = isReachable
        self.unreachableReason = unreachableReason
        self.logger = logger
        up = metrics.gauge(
            "insightd_store_up", help: "1 while the shared store (PostgreSQL) answers; 0 while requests that need it are answered 503."
        )
        .labels()
        up.set(1)
    }

    /// The looks' schedule: every second.
    func periodicJob() -> PeriodicJob {
        PeriodicJob("insightd.store-watch", firstAfter: 1, every: 1) { self.look() }
    }

    /// Looks now.
    func look() {
        let reachable = isReachable()
        let changed = wasReachable.withLock { was in
            defer { was = reachable }
            return was != reachable
        }
        up.set(reachable ? 1 : 0)
        guard changed else { return }
        if reachable {
            logger.info("store reachable again")
        } else {
            logger.error(
                "store unreachable: requests that need it are answered 503 and /readyz is false until it is back",
                unreachableReason().map { [("reason", .string($0))] } ?? [])
        }
    }
}
