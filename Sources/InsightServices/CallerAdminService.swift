import InsightDomain

/// The admin API's use cases (docs/api.md "Admin API"): an admin sees and changes only the
/// callers of its own tenant and environment (`Caller.administers`); another tenant's or
/// environment's caller is as absent as one that never existed.
public struct CallerAdminService: Sendable {
    let administration: any CallerAdministration
    let limiter: any RateLimits
    let clock: any Clock

    public init(administration: any CallerAdministration, limiter: any RateLimits, clock: any Clock) {
        self.administration = administration
        self.limiter = limiter
        self.clock = clock
    }

    /// A caller's rate limit as an operator sees it.
    public struct RateLimitState: Sendable, Equatable {
        public var caller: Caller
        public var view: RateLimitView
        public var compliance: CompliancePolicy
    }

    /// Every caller of the admin's tenant and environment.
    public func callers(of admin: Caller) throws(Rejection) -> [Caller] {
        let all: [Caller]
        do { all = try administration.callers(tenant: admin.tenant) } catch { throw .unreadable(.callers) }
        return all.filter(admin.administers)
    }

    /// One caller of the admin's tenant and environment.
    public func caller(_ callerId: String, of admin: Caller) throws(Rejection) -> Caller {
        let found: Caller?
        do { found = try administration.caller(callerId, tenant: admin.tenant) } catch { throw .unreadable(.callers) }
        guard let found, admin.administers(found) else { throw .callerNotFound }
        return found
    }

    /// Changes a caller's rate, burst and/or training capture (at least one is given). A rate or
    /// burst above the ceiling the operator set on the tenant is refused: an admin key may
    /// change its tenant's callers, itself included, but not beyond what the operator allows.
    public func updateCaller(
        _ callerId: String, rate: Double?, burst: Int?, trainingCapture: Bool? = nil, of admin: Caller,
        resume: @escaping Resume, completion: @escaping Completion<Caller>
    ) {
        // The store changes any caller of the tenant: the environment is checked first (a caller
        // never changes environment).
        do { _ = try caller(callerId, of: admin) } catch { return completion(.failure(error)) }
        if rate != nil || burst != nil {
            let ceiling: TenantCeiling
            do { ceiling = try administration.ceiling(tenant: admin.tenant) } catch {
                return completion(.failure(.unreadable(.callers)))
            }
            if let rate, let maxRate = ceiling.maxRate, rate > maxRate {
                return completion(
                    .failure(
                        .invalid(
                            field: "rate",
                            detail: Self.aboveCeiling("\(maxRate == maxRate.rounded() ? String(Int(maxRate)) : String(maxRate)) per second")
                        )))
            }
            if let burst, let maxBurst = ceiling.maxBurst, burst > maxBurst {
                return completion(.failure(.invalid(field: "burst", detail: Self.aboveCeiling("\(maxBurst)"))))
            }
        }
        administration.updateCaller(
            callerId: callerId, tenant: admin.tenant, rate: rate, burst: burst,
            trainingCapture: trainingCapture
        ) { result in
            resume {
                switch result {
                case .success(let caller?): completion(.success(caller))
                case .success(nil): completion(.failure(.callerNotFound))
                case .failure(let failure): completion(.failure(.store(failure)))
                }
            }
        }
    }

    private static func aboveCeiling(_ ceiling: String) -> String {
        "is above this tenant's ceiling of \(ceiling), which the operator sets (insightctl tenants update); ask the operator to raise it"
    }

    /// A caller's quota, penalty and reporting counts.
    public func rateLimit(_ callerId: String, of admin: Caller) throws(Rejection) -> RateLimitState {
        let caller = try caller(callerId, of: admin)
        return RateLimitState(caller: caller, view: limiter.view(caller), compliance: limiter.settings.compliance)
    }

    /// Every caller of the admin's tenant and environment with its rate limit now, oldest caller first.
    public func rateLimits(of admin: Caller) throws(Rejection) -> [RateLimitState] {
        let compliance = limiter.settings.compliance
        return try callers(of: admin).map { RateLimitState(caller: $0, view: limiter.view($0), compliance: compliance) }
    }

    /// A caller's keys (ids and dates; secrets are never stored), oldest first.
    public func keys(_ callerId: String, of admin: Caller) throws(Rejection) -> [StoredKey] {
        _ = try caller(callerId, of: admin)
        let found: [StoredKey]?
        do { found = try administration.keys(callerId: callerId, tenant: admin.tenant) } catch { throw .unreadable(.callers) }
        guard let found else { throw .callerNotFound }
        return found
    }

    /// Revokes one key of a caller of the admin's tenant; revoking it again changes nothing.
    /// Authentication stops accepting it within the credential cache's time.
    public func revokeKey(
        _ keyId: String, of callerId: String, by admin: Caller, resume: @escaping Resume,
        completion: @escaping Completion<StoredKey>
    ) throws(Rejection) {
        // An unknown caller (or another tenant's) is `callerNotFound`, as on every admin route;
        // the store then refuses a key that is not this caller's, whatever happened meanwhile.
        _ = try caller(callerId, of: admin)
        administration.revokeKey(callerId: callerId, keyId: keyId, tenant: admin.tenant, at: clock.now()) { result in
            resume {
                switch result {
                case .success(let key?): completion(.success(key))
                case .success(nil): completion(.failure(.keyNotFound))
                case .failure(let failure): completion(.failure(.store(failure)))
                }
            }
        }
    }

    /// Forgives the caller's overdue reports so far, clears its penalty and throttling history, and
    /// leaves its bucket as it is (docs/rate-limits.md "Resets": a reset gives back no token).
    public func resetRateLimit(
        _ callerId: String, of admin: Caller, resume: @escaping Resume,
        completion: @escaping Completion<RateLimitState>
    ) throws(Rejection) {
        let caller = try caller(callerId, of: admin)
        let limiter = self.limiter
        administration.resetPenalty(callerId: callerId, tenant: admin.tenant, at: clock.now()) { result in
            resume {
                switch result {
                case .success(true):
                    limiter.reset(caller)
                    completion(
                        .success(
                            RateLimitState(
                                caller: caller, view: limiter.view(caller),
                                compliance: limiter.settings.compliance)))
                case .success(false): completion(.failure(.callerNotFound))
                case .failure(let failure): completion(.failure(.store(failure)))
                }
            }
        }
    }
}
