/// Why a store refused to register a caller, issue or revoke a key, change a quota or set a
/// tenant's ceiling: the same value from every backend (SQLite, PostgreSQL, the in-memory
/// fake), so that `insightctl` and tests read one answer. Descriptions are for operators and
/// safe to log (they name ids, never secrets).
public enum CallerRegistrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The tenant name is not one (`Tenant.isValidName`).
    case invalidTenant(String)
    /// A caller needs at least one role.
    case noRoles
    /// A rate must be positive and finite.
    case invalidRate
    /// A burst must be at least 1.
    case invalidBurst
    /// The trimmed name is empty, too long or holds a character that could hide text (`Caller.validName`).
    case invalidName
    /// A tenant's rate ceiling must be positive and finite.
    case invalidRateCeiling
    /// A tenant's burst ceiling must be at least 1.
    case invalidBurstCeiling
    /// Another caller has this id.
    case callerExists(String)
    /// No caller has this id.
    case noCaller(String)
    /// No key has this id.
    case noKey(String)
    /// The key was revoked before.
    case keyAlreadyRevoked(String)

    public var description: String {
        switch self {
        case .invalidTenant(let name):
            "\(name.isEmpty ? "an empty name" : name) is not a tenant name: a tenant is 1 to \(Tenant.maxNameLength) of "
                + "a-z, 0-9, '-', '_', '.', starting with a letter or digit"
        case .noRoles: "a caller needs at least one role"
        case .invalidRate: "rate must be a positive number"
        case .invalidBurst: "burst must be at least 1"
        case .invalidName: Caller.nameRule
        case .invalidRateCeiling: "the rate ceiling must be a positive number"
        case .invalidBurstCeiling: "the burst ceiling must be at least 1"
        case .callerExists(let id): "caller \(id) already exists"
        case .noCaller(let id): "no caller \(id)"
        case .noKey(let id): "no key \(id)"
        case .keyAlreadyRevoked(let id): "key \(id) is already revoked"
        }
    }
}

extension Caller {
    /// The caller a store registers for these values (its name trimmed), or why it refuses them:
    /// the tenant name, the roles (none), the rate (not positive and finite), the burst (below 1)
    /// and the name (`validName`) are checked in that order. Whether `callerId` is taken is the
    /// store's to say (`CallerRegistrationError.callerExists`).
    public static func registering(
        callerId: String, name: String, tenant: String, environment: Environment,
        roles: Set<Role>, rate: Double, burst: Int,
        now: Milliseconds
    ) throws(CallerRegistrationError) -> Caller {
        guard Tenant.isValidName(tenant) else { throw .invalidTenant(tenant) }
        guard !roles.isEmpty else { throw .noRoles }
        try checkQuota(rate: rate, burst: burst)
        guard let trimmed = validName(name) else { throw .invalidName }
        return Caller(
            callerId: callerId, name: trimmed, tenant: tenant, environment: environment, roles: roles,
            rate: rate, burst: burst, createdAt: now)
    }

    /// Whether a rate and a burst (nil: left as they are) may be a caller's quota: a rate positive
    /// and finite, a burst at least 1.
    public static func checkQuota(rate: Double?, burst: Int?) throws(CallerRegistrationError) {
        if let rate, !isValidRate(rate) { throw .invalidRate }
        if let burst, !isValidBurst(burst) { throw .invalidBurst }
    }

    /// A rate a caller's quota or a tenant's ceiling may have: positive and finite.
    public static func isValidRate(_ rate: Double) -> Bool { rate > 0 && rate.isFinite }

    /// A burst a caller's quota or a tenant's ceiling may have: at least 1.
    public static func isValidBurst(_ burst: Int) -> Bool { burst >= 1 }
}

extension TenantCeiling {
    /// Whether this ceiling may be set on `tenant`: a valid tenant name, a rate ceiling positive
    /// and finite, a burst ceiling at least 1 (nil members: no ceiling, always allowed).
    public func check(tenant: String) throws(CallerRegistrationError) {
        guard Tenant.isValidName(tenant) else { throw .invalidTenant(tenant) }
        if let maxRate, !Caller.isValidRate(maxRate) { throw .invalidRateCeiling }
        if let maxBurst, !Caller.isValidBurst(maxBurst) { throw .invalidBurstCeiling }
    }

    /// `rate` as a caller of this tenant may have it: at most the rate ceiling.
    public func capping(rate: Double) -> Double { min(rate, maxRate ?? rate) }

    /// `burst` as a caller of this tenant may have it: at most the burst ceiling.
    public func capping(burst: Int) -> Int { min(burst, maxBurst ?? burst) }
}
