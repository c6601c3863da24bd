import Synchronization

/// Counts consumption reporting per caller from the durable store.
public protocol ReportingStatsSource: Sendable {
    /// Stats per caller id over evaluations created since `since` (and since each caller's
    /// last penalty reset), judged at `now`.
    func reportingStats(since: Milliseconds, now: Milliseconds) throws -> [String: ReportingStats]
}

/// Why a request was refused.
public enum ThrottleReason: String, Sendable, CaseIterable {
    /// The caller's own rate and burst.
    case callerRate
    /// The caller's rate, cut because consumption reports are overdue.
    case reportingPenalty
    /// Too many evaluations for one device in the last hour.
    case deviceRate
    /// The tenant holds as many opt-outs as the operator allows.
    case denialCapacity
}

/// The state of a caller's quota, for headers and the admin view.
public struct QuotaStatus: Sendable, Equatable {
    /// The configured policy and the one in force after any penalty.
    public var configured: GCRA
    public var effective: GCRA
    public var penaltyStep: Int
    /// Requests that may go now.
    public var remaining: Int
    /// Seconds until the bucket is full again.
    public var resetSeconds: Int

    public init(configured: GCRA, effective: GCRA, penaltyStep: Int, remaining: Int, resetSeconds: Int) {
        self.configured = configured
        self.effective = effective
        self.penaltyStep = penaltyStep
        self.remaining = remaining
        self.resetSeconds = resetSeconds
    }
}

/// The decision on one request.
public enum Admission: Sendable, Equatable {
    case allowed(QuotaStatus)
    case throttled(ThrottleReason, QuotaStatus, retryAfterSeconds: Int)
}

/// What an operator sees of one caller's rate limit.
public struct RateLimitView: Sendable, Equatable {
    public var quota: QuotaStatus
    public var stats: ReportingStats
    public var allowance: Int
    public var throttledCount: Int
    public var lastThrottledAt: Milliseconds?
    public var lastThrottleReason: ThrottleReason?
    /// When the reporting counts were last read from the store.
    public var statsAsOf: Milliseconds?

    public init(
        quota: QuotaStatus, stats: ReportingStats, allowance: Int, throttledCount: Int,
        lastThrottledAt: Milliseconds?, lastThrottleReason: ThrottleReason?, statsAsOf: Milliseconds?
    ) {
        self.quota = quota
        self.stats = stats
        self.allowance = allowance
        self.throttledCount = throttledCount
        self.lastThrottledAt = lastThrottledAt
        self.lastThrottleReason = lastThrottleReason
        self.statsAsOf = statsAsOf
    }
}

/// Settings of the limiter.
public struct RateLimitSettings: Sendable, Equatable {
    public var compliance = CompliancePolicy()
    /// Evaluations allowed per device (hashed, per environment) per hour.
    public var devicePerHour = 120
    /// Each insight type's quota, as a multiple of the caller's evaluation rate and burst
    /// (2: a caller may ask for the current and a prior model version at its full rate).
    public var insightQuotaFactor = 2.0
    /// Most devices tracked before fully refilled entries are dropped.
    public var maxTrackedDevices = 1_000_000

    public init() {}
}

/// In-memory rate limits: per-caller GCRA with the reporting penalty, per-device and
/// per-insight-type quotas. Reporting counts come from the store through `refresh`, so they
/// are right after a restart; bucket levels start full after a restart.
public final class RateLimiter: RateLimits {
    private struct CallerState {
        var tat: Double?
        var step = 0
        var stepChangedAt: Milliseconds = 0
        var stats = ReportingStats()
        var throttled = 0
        var lastThrottledAt: Milliseconds?
        var lastReason: ThrottleReason?
        var insightTats: [String: Double] = [:]
    }

    /// A device's bucket: its environment and its `SubjectKey`, as velocity keys subjects.
    private struct DeviceKey: Hashable {
        let environment: Environment
        let subject: UInt64
    }

    public let settings: RateLimitSettings
    private let clock: any Clock
    private let callers = Mutex<[String: CallerState]>([:])
    private let devices = Mutex<[DeviceKey: Double]>([:])
    private let statsAsOf = Mutex<Milliseconds?>(nil)

    public init(settings: RateLimitSettings, clock: any Clock) {
        self.settings = settings
        self.clock = clock
    }

    // MARK: Decisions

    /// Admits one request of `caller` against its (possibly penalised) rate: an evaluation, a
    /// label batch, a subject's look-up or change; `cost` tokens of the same bucket.
    public func admit(_ caller: Caller, cost: Int) -> Admission {
        let now = clock.now()
        // The caller's state is changed in place: one look-up of its id, and no copy of its
        // insight quotas (reading it out and writing it back hashed the id twice and copied them).
        return callers.withLock { all in
            admit(caller, cost: cost, now: now, state: &all[caller.callerId, default: CallerState()])
        }
    }

    private func admit(_ caller: Caller, cost: Int, now: Milliseconds, state: inout CallerState) -> Admission {
        advance(&state, now: now)
        let (configured, effective) = policies(caller, step: state.step)
        let decision = effective.decide(now: Double(now), tat: state.tat, cost: cost)
        var status = QuotaStatus(
            configured: configured, effective: effective, penaltyStep: state.step,
            remaining: decision.remaining,
            resetSeconds: Int((decision.resetAfter / 1000).rounded(.up)))
        state.tat = decision.tat  // also when refused: the TAT as it stands now (see GCRA)
        guard !decision.allowed else { return .allowed(status) }
        status.remaining = 0
        let reason: ThrottleReason = state.step > 0 ? .reportingPenalty : .callerRate
        state.throttled += 1
        state.lastThrottledAt = now
        state.lastReason = reason
        return .throttled(reason, status, retryAfterSeconds: max(1, Int((decision.retryAfter / 1000).rounded(.up))))
    }

    /// Admits one evaluation for a device; nil when the device is within its hourly limit,
    /// else the seconds until it may try again.
    public func admitDevice(_ hash: [UInt8], environment: Environment, caller: Caller) -> Int? {
        let now = Double(clock.now())
        let limit = settings.deviceLimit
        let key = DeviceKey(environment: environment, subject: SubjectKey.of(hash))
        let retry: Int? = devices.withLock { all in
            let decision = limit.decide(now: now, tat: all[key])
            guard decision.allowed else {
                all[key] = decision.tat
                return max(1, Int((decision.retryAfter / 1000).rounded(.up)))
            }
            if all.count >= settings.maxTrackedDevices {
                // Entries whose bucket has refilled carry no information: drop them.
                all = all.filter { $0.value > now }
            }
            all[key] = decision.tat
            return nil
        }
        if retry != nil {
            callers.withLock { all in
                all[caller.callerId, default: CallerState()].throttled += 1
                all[caller.callerId]?.lastThrottledAt = Int64(now)
                all[caller.callerId]?.lastReason = .deviceRate
            }
        }
        return retry
    }

    /// Takes one unit of the caller's quota for `insightType`; false when it is used up.
    public func admitInsight(_ insightType: String, caller: Caller) -> Bool {
        let now = Double(clock.now())
        let quota = settings.insightQuota(GCRA(rate: caller.rate, burst: caller.burst))
        return callers.withLock { all in
            Self.take(quota, now: now, tat: &all[caller.callerId, default: CallerState()].insightTats[insightType])
        }
    }

    /// One request against `quota`, with its TAT changed in place.
    private static func take(_ quota: GCRA, now: Double, tat: inout Double?) -> Bool {
        let decision = quota.decide(now: now, tat: tat)
        tat = decision.tat
        return decision.allowed
    }

    /// The quota state of `caller` now, without taking anything from it.
    public func status(_ caller: Caller) -> QuotaStatus {
        let now = clock.now()
        return callers.withLock { all in
            var state = all[caller.callerId] ?? CallerState()
            advance(&state, now: now)
            all[caller.callerId] = state
            let (configured, effective) = policies(caller, step: state.step)
            let reset = max(state.tat ?? Double(now), Double(now)) - Double(now)
            return QuotaStatus(
                configured: configured, effective: effective, penaltyStep: state.step,
                remaining: effective.available(now: Double(now), tat: state.tat),
                resetSeconds: Int((reset / 1000).rounded(.up)))
        }
    }

    // MARK: Reporting compliance

    /// Replaces the reporting counts (read from the store) and moves penalty steps.
    public func update(_ stats: [String: ReportingStats]) {
        let now = clock.now()
        callers.withLock { all in
            for id in Set(all.keys).union(stats.keys) {
                var state = all[id] ?? CallerState()
                state.stats = stats[id] ?? ReportingStats()
                advance(&state, now: now)
                all[id] = state
            }
        }
        statsAsOf.withLock { $0 = now }
    }

    /// Reads the counts from `source` and applies them.
    public func refresh(from source: any ReportingStatsSource) throws {
        let now = clock.now()
        update(try source.reportingStats(since: now - Milliseconds(settings.compliance.windowSeconds) * 1000, now: now))
    }

    /// Forgets the caller's penalty, counts and throttling history; keeps its bucket and its
    /// insight quotas (`RateLimits.reset`).
    public func reset(_ caller: Caller) {
        let now = clock.now()
        callers.withLock { all in
            let before = all[caller.callerId] ?? CallerState()
            var state = CallerState(stepChangedAt: now)
            state.tat = GCRA(rate: caller.rate, burst: caller.burst).resetTat(before.tat, now: Double(now))
            state.insightTats = before.insightTats
            all[caller.callerId] = state
        }
    }

    /// The operator's view of `caller`.
    public func view(_ caller: Caller) -> RateLimitView {
        let quota = status(caller)
        let asOf = statsAsOf.withLock { $0 }
        return callers.withLock { all in
            let state = all[caller.callerId] ?? CallerState()
            return RateLimitView(
                quota: quota, stats: state.stats, allowance: settings.compliance.allowance(state.stats),
                throttledCount: state.throttled, lastThrottledAt: state.lastThrottledAt,
                lastThrottleReason: state.lastReason, statsAsOf: asOf)
        }
    }

    private func advance(_ state: inout CallerState, now: Milliseconds) {
        settings.compliance.advance(
            step: &state.step, changedAt: &state.stepChangedAt,
            target: settings.compliance.targetStep(state.stats), now: now)
    }

    private func policies(_ caller: Caller, step: Int) -> (GCRA, GCRA) {
        let configured = GCRA(rate: caller.rate, burst: caller.burst)
        return (configured, settings.compliance.effective(configured, step: step))
    }
}
