import InsightDomain

/// The caller's quota: every evaluation, label batch and authorization change costs a token,
/// taken before its body is read (the API's `Route.costsQuota` says which requests).
public struct QuotaGate: Sendable {
    let limiter: any RateLimits
    let metrics: ServiceMetrics

    public init(limiter: any RateLimits, metrics: ServiceMetrics) {
        self.limiter = limiter
        self.metrics = metrics
    }

    /// Takes one token of `caller`'s quota, or refuses with what the caller needs to know.
    public func admit(_ caller: Caller) throws(Rejection) -> QuotaStatus {
        switch limiter.admit(caller) {
        case .allowed(let status): return status
        case .throttled(let reason, let status, let retryAfter):
            metrics.throttled(reason)
            throw .throttled(CallerThrottle(reason: reason, status: status, retryAfterSeconds: retryAfter,
                                            view: limiter.view(caller), compliance: limiter.settings.compliance))
        }
    }
}
