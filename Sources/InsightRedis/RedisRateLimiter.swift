import InsightDomain
import RedisClient

/// Rate limits shared by every instance, in Redis (docs/rate-limits.md, "Several instances:
/// Redis"): each caller's GCRA bucket with its reporting penalty, each device's hourly bucket and
/// each insight type's quota are one bucket across instances, decided by scripts on the server's
/// clock (an evaluation's device limit and insight quotas in one, with its velocity read:
/// `RedisEvaluationGate`).
///
/// **Penalties.** The instance that runs the compliance recount calls `update` (or `refresh`):
/// it writes every caller's counts and target step into Redis, where every instance's next
/// decision reads them, so a penalty applies everywhere at once; steps fall on the server's
/// clock, one per recovery period, as `RateLimiter`'s do.
///
/// **Redis unavailable** (`RedisLink`): decisions fall back to an in-memory `RateLimiter` that
/// gives each caller a local share of its quota — its rate and burst, and the device limit,
/// divided by `instances` (at least one request of burst) — so that N instances together grant
/// about one quota, never N. The fallback knows a penalty only on the instance that runs the
/// recount (`update` feeds it too). When Redis is back, decisions use it again; buckets there
/// start from what they held (or full, if Redis lost its data) and the next recount writes the
/// penalties again.
public final class RedisRateLimiter: RateLimits {
    public let settings: RateLimitSettings
    public let link: RedisLink
    /// The local share used while Redis is unavailable.
    public let fallback: RateLimiter
    /// How many instances share the quotas: the fallback's divisor.
    public let instances: Int
    private let clock: any Clock
    /// How long a caller's hash lives after its last write: longer than the counting window
    /// and the deepest penalty's recovery, so nothing that still matters expires.
    let callerLifetime: Int64

    /// `instances` is how many instances share the quotas (at least 1); `clock` is only used for
    /// the windows of `refresh` and the time of the counts (decisions use the server's clock).
    public init(link: RedisLink, settings: RateLimitSettings, clock: any Clock, instances: Int) {
        precondition(instances >= 1, "at least one instance")
        self.link = link
        self.settings = settings
        self.clock = clock
        self.instances = instances
        var local = settings
        local.devicePerHour = max(1, settings.devicePerHour / instances)
        fallback = RateLimiter(settings: local, clock: clock)
        let recovery = Int64(settings.compliance.recoverySeconds) * Int64(settings.compliance.maxStep + 1)
        callerLifetime = (max(Int64(settings.compliance.windowSeconds), recovery) + 86_400) * 1000
    }

    // MARK: Decisions

    public func admit(_ caller: Caller, cost: Int) -> Admission {
        let key = callerKey(caller.callerId)
        let arguments = [RedisArgument(cost)] + stepArguments(caller)
        let reply = link.perform { connection throws(RedisError) in
            try connection.run(RateLimitScripts.admit, keys: [key], arguments: arguments)
        }
        return admission(reply?.elements, caller: caller, cost: cost)
    }

    /// The caller's admission from an evaluation's preflight reply (`RedisEvaluationGate`); the
    /// local share's when Redis did not answer.
    func callerVerdict(_ reply: PreflightReply?, caller: Caller) -> Admission {
        admission(reply?.caller, caller: caller)
    }

    /// `admit`'s answer {allowed, step, remaining, retry ms, reset ms} as an admission; the local
    /// share's when there is none (Redis did not answer).
    private func admission(_ parts: [RedisReply]?, caller: Caller, cost: Int = 1) -> Admission {
        guard let parts, parts.count == 5, let allowed = parts[0].integer,
            let step = parts[1].integer, let remaining = parts[2].integer,
            let retry = parts[3].string.flatMap(Double.init), let reset = parts[4].string.flatMap(Double.init)
        else {
            return withConfigured(fallback.admit(localShare(caller), cost: cost), caller)
        }
        let configured = GCRA(rate: caller.rate, burst: caller.burst)
        let status = QuotaStatus(
            configured: configured,
            effective: settings.compliance.effective(configured, step: Int(step)),
            penaltyStep: Int(step), remaining: Int(remaining),
            resetSeconds: Int((reset / 1000).rounded(.up)))
        if allowed == 1 { return .allowed(status) }
        return .throttled(
            step > 0 ? .reportingPenalty : .callerRate, status,
            retryAfterSeconds: max(1, Int((retry / 1000).rounded(.up))))
    }

    public func admitDevice(_ hash: [UInt8], environment: Environment, caller: Caller) -> Int? {
        var preflight = Preflight(callerKey: callerKey(caller.callerId))
        preflight.device = devicePart(hash, environment: environment)
        preflight.lifetime = callerLifetime
        return deviceVerdict(preflight.run(on: link), device: hash, environment: environment, caller: caller)
    }

    public func admitInsight(_ insightType: String, caller: Caller) -> Bool {
        var preflight = Preflight(callerKey: callerKey(caller.callerId))
        preflight.insights = [insightPart(insightType, caller: caller)]
        preflight.lifetime = callerLifetime
        return insightVerdicts(preflight.run(on: link), types: [insightType], caller: caller)[0]
    }

    // MARK: Parts of an evaluation's preflight (RedisEvaluationGate)

    /// A device's bucket and the hourly limit.
    func devicePart(_ hash: [UInt8], environment: Environment) -> (key: RedisArgument, limit: GCRA) {
        (deviceKey(hash, environment), settings.deviceLimit)
    }

    /// An insight type's quota for `caller`.
    func insightPart(_ insightType: String, caller: Caller) -> (field: String, quota: GCRA) {
        (insightType, settings.insightQuota(GCRA(rate: caller.rate, burst: caller.burst)))
    }

    /// The device's verdict from a preflight's reply: nil when admitted, else seconds to wait;
    /// the local share's when Redis did not answer.
    func deviceVerdict(_ reply: PreflightReply?, device: [UInt8], environment: Environment, caller: Caller) -> Int? {
        guard let reply else { return fallback.admitDevice(device, environment: environment, caller: localShare(caller)) }
        return reply.deviceAllowed ? nil : max(1, Int((reply.deviceRetryMilliseconds / 1000).rounded(.up)))
    }

    /// Each insight quota's verdict from a preflight's reply; the local share's when Redis did
    /// not answer.
    func insightVerdicts(_ reply: PreflightReply?, types: [String], caller: Caller) -> [Bool] {
        guard let reply, reply.insightsAdmitted.count == types.count else {
            return types.map { fallback.admitInsight($0, caller: localShare(caller)) }
        }
        return reply.insightsAdmitted
    }

    public func status(_ caller: Caller) -> QuotaStatus {
        guard let state = shared(caller) else { return withConfigured(fallback.status(localShare(caller)), caller) }
        return state.quota
    }

    public func view(_ caller: Caller) -> RateLimitView {
        guard let state = shared(caller) else {
            var view = fallback.view(localShare(caller))
            view.quota.configured = GCRA(rate: caller.rate, burst: caller.burst)
            return view
        }
        return RateLimitView(
            quota: state.quota, stats: state.stats, allowance: settings.compliance.allowance(state.stats),
            throttledCount: state.throttled, lastThrottledAt: state.lastThrottledAt,
            lastThrottleReason: state.lastReason, statsAsOf: state.statsAsOf)
    }

    private struct SharedState {
        var quota: QuotaStatus
        var stats: ReportingStats
        var throttled: Int
        var lastThrottledAt: Milliseconds?
        var lastReason: ThrottleReason?
        var statsAsOf: Milliseconds?
    }

    private func shared(_ caller: Caller) -> SharedState? {
        let keys = [callerKey(caller.callerId), statsAsOfKey]
        let arguments = stepArguments(caller)
        let reply = link.perform { connection throws(RedisError) in
            try connection.run(RateLimitScripts.view, keys: keys, arguments: arguments)
        }
        guard let parts = reply?.elements, parts.count == 12, let step = parts[0].integer,
            let available = parts[1].integer, let reset = parts[2].string.flatMap(Double.init)
        else { return nil }
        func count(_ i: Int) -> Int { parts[i].string.flatMap { Int($0) } ?? 0 }
        let configured = GCRA(rate: caller.rate, burst: caller.burst)
        let quota = QuotaStatus(
            configured: configured, effective: settings.compliance.effective(configured, step: Int(step)),
            penaltyStep: Int(step), remaining: Int(available),
            resetSeconds: Int((reset / 1000).rounded(.up)))
        return SharedState(
            quota: quota,
            stats: ReportingStats(
                evaluations: count(3), onTime: count(4), late: count(5),
                overdue: count(6), pending: count(7)),
            throttled: count(8), lastThrottledAt: parts[9].string.flatMap { Milliseconds($0) },
            lastReason: parts[10].string.flatMap { ThrottleReason(rawValue: $0) },
            statsAsOf: parts[11].string.flatMap { Milliseconds($0) })
    }

    // MARK: Reporting compliance

    /// Callers written per script call of `update`.
    static let updateBatch = 200

    /// Writes every caller's counts and target step into Redis (the callers of the last update
    /// that are not in `stats` get zero counts), and feeds the local fallback the same.
    public func update(_ stats: [String: ReportingStats]) {
        fallback.update(stats)
        let now = clock.now()
        let members = statsMembersKey
        let callerKey = self.callerKey
        let policy = settings.compliance
        let lifetime = callerLifetime
        _ = link.perform { connection throws(RedisError) -> Void in
            let known = try connection.command("SMEMBERS", members).elements?.compactMap(\.string) ?? []
            let ids = Set(known).union(stats.keys).sorted()
            var commands: [RedisCommand] = []
            for start in stride(from: 0, to: ids.count, by: Self.updateBatch) {
                let batch = ids[start..<min(ids.count, start + Self.updateBatch)]
                var arguments: [RedisArgument] = [RedisArgument(Int64(policy.recoverySeconds) * 1000), RedisArgument(lifetime)]
                for id in batch {
                    let counts = stats[id] ?? ReportingStats()
                    arguments += [
                        RedisArgument(policy.targetStep(counts)), RedisArgument(counts.evaluations),
                        RedisArgument(counts.onTime), RedisArgument(counts.late), RedisArgument(counts.overdue),
                        RedisArgument(counts.pending)
                    ]
                }
                commands.append(.script(RateLimitScripts.update, keys: batch.map(callerKey), arguments: arguments))
            }
            let counted = ids.filter { stats[$0].map { $0 != ReportingStats() } ?? false }
            let cleared = ids.filter { stats[$0].map { $0 == ReportingStats() } ?? true }
            if !counted.isEmpty { commands.append(RedisCommand([RedisArgument("SADD"), members] + counted.map { RedisArgument($0) })) }
            if !cleared.isEmpty { commands.append(RedisCommand([RedisArgument("SREM"), members] + cleared.map { RedisArgument($0) })) }
            commands.append(RedisCommand("SET", self.statsAsOfKey, RedisArgument(now)))
            for reply in try connection.pipeline(commands) {
                if case .error(let text) = reply { throw RedisError.server(text) }
            }
        }
    }

    public func refresh(from source: any ReportingStatsSource) throws {
        let now = clock.now()
        update(try source.reportingStats(since: now - Milliseconds(settings.compliance.windowSeconds) * 1000, now: now))
    }

    /// Forgets the caller's penalty, counts and throttling history and keeps its bucket
    /// (`RateLimits.reset`), in Redis (for every instance) and in the local fallback.
    public func reset(_ caller: Caller) {
        fallback.reset(localShare(caller))
        let key = callerKey(caller.callerId), members = statsMembersKey
        let arguments = [number(GCRA(rate: caller.rate, burst: caller.burst).capacity), RedisArgument(callerLifetime)]
        _ = link.perform { connection throws(RedisError) in
            try connection.pipeline([
                .script(RateLimitScripts.reset, keys: [key], arguments: arguments),
                RedisCommand("SREM", members, RedisArgument(caller.callerId))
            ])
        }
    }

    // MARK: Keys and arguments

    /// A caller's hash: bucket, penalty step, counts, throttling, insight quotas. Caller ids are
    /// made by the daemon (`caller_…`), never by a caller.
    var callerKey: @Sendable (String) -> RedisArgument {
        let prefix = link.settings.keyPrefix
        return { RedisArgument(prefix + "rl:c:" + $0) }
    }

    /// A device's bucket: environment and subject key (the first 8 bytes of its HMAC), as the
    /// in-memory limiter keys it. No raw identifier reaches Redis.
    private func deviceKey(_ hash: [UInt8], _ environment: Environment) -> RedisArgument {
        link.key("rl:d:\(environment.rawValue):" + String(VelocityKeys.of(hash), radix: 16))
    }

    private var statsMembersKey: RedisArgument { link.key("rl:counted") }
    private var statsAsOfKey: RedisArgument { link.key("rl:countedAt") }

    /// ARGV of `caller_state`: the recovery period, the key's lifetime and each step's policy.
    func stepArguments(_ caller: Caller) -> [RedisArgument] {
        let configured = GCRA(rate: caller.rate, burst: caller.burst)
        let steps = settings.compliance.maxStep + 1
        var arguments: [RedisArgument] = [
            RedisArgument(Int64(settings.compliance.recoverySeconds) * 1000),
            RedisArgument(callerLifetime), RedisArgument(steps)
        ]
        arguments.reserveCapacity(3 + 2 * steps)
        for step in 0..<steps {
            let effective = settings.compliance.effective(configured, step: step)
            arguments.append(number(effective.rate))
            arguments.append(RedisArgument(effective.burst))
        }
        return arguments
    }

    private func number(_ value: Double) -> RedisArgument { RedisArgument("\(value)") }

    // MARK: The local share

    /// The caller as the fallback sees it: its rate and burst divided among the instances.
    private func localShare(_ caller: Caller) -> Caller {
        var share = caller
        share.rate = caller.rate / Double(instances)
        share.burst = max(1, caller.burst / instances)
        return share
    }

    /// The fallback's answer with the caller's own policy as the configured one.
    private func withConfigured(_ admission: Admission, _ caller: Caller) -> Admission {
        switch admission {
        case .allowed(let status): .allowed(withConfigured(status, caller))
        case .throttled(let reason, let status, let retry): .throttled(reason, withConfigured(status, caller), retryAfterSeconds: retry)
        }
    }

    private func withConfigured(_ status: QuotaStatus, _ caller: Caller) -> QuotaStatus {
        var status = status
        status.configured = GCRA(rate: caller.rate, burst: caller.burst)
        return status
    }
}
