import InsightDomain
import InsightRedis
import RedisClient
import Telemetry

/// The rate limits and velocity the use cases consult: in this process (the embedded mode, one
/// instance; velocity replayed from the store at start), or in Redis, shared by every instance
/// (`INSIGHTD_REDIS_URL`), where a Redis that does not answer leaves each instance its local share
/// of every quota and no escalation by velocity until it is back.
struct SharedState: Service {
    let limiter: any RateLimits
    let velocity: any VelocityState
    /// What an evaluation asks of both before it is answered: one round trip with Redis.
    let gate: any EvaluationGate
    /// The in-memory tracker of the embedded mode (rebuilt from the store at start); nil with Redis.
    let tracker: VelocityTracker?
    private let link: RedisLink?

    init(
        settings: Settings, history: any VelocityHistory, leadership: any JobLeadership, clock: any Clock,
        metrics: MetricsRegistry, logger: Logger
    ) throws {
        guard let url = settings.redisURL else {
            let tracker = VelocityTracker(clock: clock)
            self.tracker = tracker
            velocity = tracker
            let limiter = RateLimiter(settings: settings.rateLimitSettings, clock: clock)
            self.limiter = limiter
            gate = SeparateCallsGate(limits: limiter, velocity: tracker)
            link = nil
            return
        }
        let endpoint: RedisEndpoint
        do { endpoint = try RedisEndpoint(url) } catch {
            throw AppError("INSIGHTD_REDIS_URL is not a usable redis:// or redis-sentinel:// URL: \(error)")
        }
        let linkSettings = RedisLinkSettings(endpoint: endpoint)
        if case .sentinels(let sentinels) = endpoint {
            try Self.checkMasterName(sentinels, timeout: linkSettings.backgroundTimeout)
        }
        let link = RedisLink(settings: linkSettings, metrics: metrics) { event in
            switch event {
            case .unavailable(let reason):
                logger.error("redis unavailable: local quota shares, no velocity escalation", [("reason", .string(reason))])
            case .available:
                logger.info("redis available: shared limits and velocity")
            case .masterChanged(let to, let from):
                logger.warning("redis master changed (sentinel failover)", [("master", .string(to)), ("previous", .string(from))])
            case .note(let message, let fields):
                logger.info(message, fields.map { ($0.0, .string($0.1)) })
            case .failed(let message, let reason):
                logger.warning(message, [("reason", .string(reason))])
            }
        }
        self.link = link
        tracker = nil
        let limiter = RedisRateLimiter(link: link, settings: settings.rateLimitSettings, clock: clock, instances: settings.instances)
        let velocity = RedisVelocity(
            link: link, history: history, clock: clock, metrics: metrics,
            mayRebuild: { leadership.tryLead() })
        self.limiter = limiter
        self.velocity = velocity
        gate = RedisEvaluationGate(limiter: limiter, velocity: velocity)
    }

    /// A master name the sentinels do not know is a mistake in the settings, not an outage: the
    /// instance does not start. Sentinels that do not answer are an outage: it starts without Redis.
    static func checkMasterName(_ sentinels: RedisSentinelURL, timeout: Duration) throws {
        do {
            _ = try sentinels.locateMaster(connectTimeout: timeout, commandTimeout: timeout)
        } catch .unknownMaster(let name) {
            throw AppError(
                "INSIGHTD_REDIS_URL: the sentinels (\(sentinels.sentinels.map(\.description).joined(separator: ", "))) "
                    + "monitor no master named \(name)")
        } catch {
            return
        }
    }

    /// Connects to Redis (at most a few seconds; an instance starts without it) and starts its checks.
    func start() { link?.start() }

    /// Answers the Redis calls still queued (velocity records), then stops the checks.
    func stop() { link?.stop() }
}
