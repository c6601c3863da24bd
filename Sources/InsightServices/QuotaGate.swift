import InsightDomain

/// The caller's quota: every evaluation, label batch and authorization change costs a token.
/// Label batches and authorization changes take it before their body is read (the API's
/// `Route.costsQuota`); an evaluation takes it with its other questions to the rate limits and
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

    /// Takes one token of `caller`'s quota, or refuses with what the caller needs to know.
    public func admit(_ caller: Caller) throws(Rejection) -> QuotaStatus {
        try verdict(limiter.admit(caller), caller: caller)
    }

    /// The quota after a token taken elsewhere (`admission`), or the refusal the caller is told.
    public func verdict(_ admission: Admission, caller: Caller) throws(Rejection) -> QuotaStatus {
        switch admission {
        case .allowed(let status): return status
        case .throttled(let reason, let status, let retryAfter):
            metrics.throttled(reason)
            throw .throttled(CallerThrottle(reason: reason, status: status, retryAfterSeconds: retryAfter,
                                            view: limiter.view(caller), compliance: limiter.settings.compliance))
        }
    }

    /// Runs `body`; when it refuses the request, takes the caller's token first (a throttled
    /// caller's refusal wins), so that a request refused early costs its token like any other.
    public func chargingRefusals<T>(of caller: Caller, _ body: () throws(Rejection) -> T) throws(Rejection) -> T {
        do {
            return try body()
        } catch {
            _ = try admit(caller)
            throw error
        }
    }
}
