/// The rate limits the use cases consult (docs/rate-limits.md): the caller's GCRA quota with the
/// reporting penalty, the per-device hourly limit and the per-insight-type quotas, and what an
/// operator sees of them. `RateLimiter` keeps them in this process's memory; a shared backend
/// (InsightRedis's `RedisRateLimiter`) keeps them where every instance sees them at once.
///
/// Every call is synchronous and quick: the API calls them on its event-loop threads.
public protocol RateLimits: Sendable {
    var settings: RateLimitSettings { get }

    /// Admits one request of `caller` against its (possibly penalised) rate, taking `cost`
    /// tokens of its bucket (at most its burst).
    func admit(_ caller: Caller, cost: Int) -> Admission
    /// Admits one evaluation for a device (its hash); nil when within the hourly limit, else the
    /// seconds until it may try again.
    func admitDevice(_ hash: [UInt8], environment: Environment, caller: Caller) -> Int?
    /// Takes one unit of the caller's quota for `insightType`; false when it is used up.
    func admitInsight(_ insightType: String, caller: Caller) -> Bool
    /// The quota state of `caller` now, without taking anything from it.
    func status(_ caller: Caller) -> QuotaStatus
    /// The operator's view of `caller`.
    func view(_ caller: Caller) -> RateLimitView
    /// Replaces the reporting counts (read from the store) and moves penalty steps.
    func update(_ stats: [String: ReportingStats])
    /// Reads the counts from `source` and applies them.
    func refresh(from source: any ReportingStatsSource) throws
    /// A reset of `caller` (after the store recorded it, docs/rate-limits.md "Resets"): forgets its
    /// penalty, reporting counts and throttling history, and keeps its bucket as it is, emptied
    /// at most to what its configured policy holds (`GCRA.resetTat`): a reset gives back no
    /// token, so resetting in a loop admits no more than its burst and rate allow.
    func reset(_ caller: Caller)
}

extension RateLimits {
    /// Admits one request of `caller` that costs one token.
    public func admit(_ caller: Caller) -> Admission { admit(caller, cost: 1) }
}

extension CompliancePolicy {
    /// Moves a caller's penalty `step`, last changed at `changedAt`, towards `target` at `now`:
    /// steps rise at once to what the counts call for, and fall one per recovery period counted
    /// from when the counts stopped calling for the current step. (RedisRateLimiter's scripts
    /// carry the same rule in Lua; its tests hold the two to the same answers.)
    public func advance(step: inout Int, changedAt: inout Milliseconds, target: Int, now: Milliseconds) {
        // A wall clock stepped back would otherwise delay the next step down by the whole step.
        changedAt = min(changedAt, now)
        if target >= step {
            step = target
            changedAt = now
        } else {
            let period = Milliseconds(recoverySeconds) * 1000
            let steps = Int((now - changedAt) / max(1, period))
            if steps > 0 {
                step = max(target, step - steps)
                changedAt += Milliseconds(steps) * period
            }
        }
    }

    /// The policy in force for a caller configured with `configured` on penalty `step`: rate and
    /// burst cut by the step's factor, at least one request of burst.
    public func effective(_ configured: GCRA, step: Int) -> GCRA {
        let factor = self.factor(step: step)
        return GCRA(
            rate: configured.rate * factor,
            burst: max(1, Int((Double(configured.burst) * factor).rounded(.down))))
    }
}

extension RateLimitSettings {
    /// The hourly limit of one device as a GCRA: the whole hour's allowance may come at once.
    public var deviceLimit: GCRA {
        GCRA(rate: Double(devicePerHour) / 3600, burst: devicePerHour)
    }

    /// The quota of each insight type for a caller configured with rate and burst `configured`.
    public func insightQuota(_ configured: GCRA) -> GCRA {
        GCRA(
            rate: configured.rate * insightQuotaFactor,
            burst: max(1, Int(Double(configured.burst) * insightQuotaFactor)))
    }
}
