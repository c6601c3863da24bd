import InsightDomain

/// The caller's quota: every evaluation, label batch, and look-up or change of a subject
/// (authorization, transparency, erasure) costs tokens of one bucket. All but evaluations take
/// theirs before their body is read (the API's `Route.quotaCost`); an evaluation takes it with its other questions to the rate limits and
/// velocity (`EvaluationGate`, one round trip to Redis), or, when it is refused before those, at
/// its refusal (`EvaluationService`), so that every request costs one and a throttled caller is
/// told so first either way.
public struct QuotaGate: Sendable {
    let limiter: any RateLimits
    let metrics: ServiceMetrics

    public init(limiter: any RateLimits, metrics: ServiceMetrics) {
        self.limiter = limiter
        self.metrics = metrics
    }

    /// Takes `cost` tokens of `caller`'s quota (at most its burst), or refuses with what the
    /// caller needs to know.
    public func admit(_ caller: Caller, cost: Int = 1) throws(Rejection) -> QuotaStatus {
        try verdict(limiter.admit(caller, cost: cost), caller: caller)
    }

    /// The quota after a token taken elsewhere (`admission`), or the refusal the caller is told.
    public func verdict(_ admission: Admission, caller: Caller) throws(Rejection) -> QuotaStatus {
        switch admission {
        case .allowed(let status): return status
        case .throttled(let reason, let status, let retryAfter):
            metrics.throttled(reason)
            throw .throttled(
                CallerThrottle(
                    reason: reason, status: status, retryAfterSeconds: retryAfter,
                    view: limiter.view(caller), compliance: limiter.settings.compliance))
        }
    }

    /// For a request refused before it took its token: takes it now, so that the request costs
    /// one like any other, and throws the throttled caller's refusal, which wins over the other.
    public func chargeRefusal(of caller: Caller) throws(Rejection) {
        _ = try admit(caller)
    }

    /// Runs `body`; when it refuses the request, charges the refusal (`chargeRefusal`) first.
    public func chargingRefusals<T>(of caller: Caller, _ body: () throws(Rejection) -> T) throws(Rejection) -> T {
        do {
            return try body()
        } catch {
            try chargeRefusal(of: caller)
            throw error
        }
    }
}
