import Foundation
import InsightDomain
import SQLiteClient

/// Administration of callers and keys on one connection (used by insightctl and tests).
public struct CallerRegistry: CallerRegistration {
    let db: SQLiteConnection

    public init(_ db: SQLiteConnection) { self.db = db }

    /// Creates a caller and its first key. The returned key is the only time the secret exists.
    /// Refusals are `CallerRegistrationError`s (`Caller.registering`, and `callerExists`).
    public func create(
        name: String, tenant: String = Tenant.defaultName, environment: Environment, roles: Set<Role>,
        rate: Double, burst: Int, now: Milliseconds, callerId: String
    ) throws -> (Caller, APIKey) {
        let caller = try Caller.registering(
            callerId: callerId, name: name, tenant: tenant, environment: environment,
            roles: roles, rate: rate, burst: burst, now: now)
        let key = APIKey.generate()
        do {
            try db.transaction {
                try db.prepare(
                    """
                    INSERT INTO callers (caller_id, name, environment, roles, rate, burst, created_at, tenant)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """
                ).run(
                    caller.callerId, caller.name, environment.rawValue, StoreSchema.encode(roles), rate, burst, now,
                    tenant)
                try insertKey(key, callerId: callerId, now: now)
            }
        } catch let error as SQLiteError where error.isUniqueViolation {
            throw CallerRegistrationError.callerExists(callerId)
        }
        return (caller, key)
    }

    /// Issues an additional key for an existing caller (for rotation without downtime).
    public func issueKey(callerId: String, now: Milliseconds) throws -> APIKey {
        guard try caller(callerId) != nil else { throw CallerRegistrationError.noCaller(callerId) }
        let key = APIKey.generate()
        try insertKey(key, callerId: callerId, now: now)
        return key
    }

    private func insertKey(_ key: APIKey, callerId: String, now: Milliseconds) throws {
        try db.prepare("INSERT INTO api_keys (key_id, caller_id, secret_hash, created_at) VALUES (?, ?, ?, ?)")
            .run(key.keyId, callerId, key.secretHash, now)
    }

    /// Revokes a key by its id (the part after "ik_"); takes effect within the credential cache's lifetime.
    public func revokeKey(keyId: String, now: Milliseconds) throws {
        let statement = try db.prepare("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL")
        try statement.run(now, keyId)
        guard db.changes == 1 else {
            let exists = try db.prepare("SELECT 1 FROM api_keys WHERE key_id = ?").first([keyId]) { _ in true } ?? false
            throw exists ? CallerRegistrationError.keyAlreadyRevoked(keyId) : CallerRegistrationError.noKey(keyId)
        }
    }

    /// Changes rate and/or burst (nil leaves a value as it is); a value above the tenant's ceiling (as it stands in this
    /// transaction) is stored as the ceiling (`TenantCeiling.capping`, in SQL so that the ceiling read and the update are
    /// one statement).
    public func updateQuota(callerId: String, rate: Double?, burst: Int?) throws {
        try Caller.checkQuota(rate: rate, burst: burst)
        try db.prepare(
            """
            UPDATE callers SET
                rate = min(coalesce(?1, rate), coalesce((SELECT max_rate FROM tenant_ceilings t WHERE t.tenant = callers.tenant),
                                                         coalesce(?1, rate))),
                burst = min(coalesce(?2, burst), coalesce((SELECT max_burst FROM tenant_ceilings t WHERE t.tenant = callers.tenant),
                                                          coalesce(?2, burst)))
            WHERE caller_id = ?3
            """
        ).run(rate, burst, callerId)
        guard db.changes == 1 else { throw CallerRegistrationError.noCaller(callerId) }
    }

    public func setQuota(callerId: String, rate: Double?, burst: Int?) throws -> Caller {
        try updateQuota(callerId: callerId, rate: rate, burst: burst)
        guard let caller = try caller(callerId) else { throw CallerRegistrationError.noCaller(callerId) }
        return caller
    }

    public func setTrainingCapture(callerId: String, _ on: Bool) throws -> Caller {
        try db.prepare("UPDATE callers SET training_capture = ? WHERE caller_id = ?").run(on ? 1 : 0, callerId)
        guard db.changes == 1, let caller = try caller(callerId) else { throw CallerRegistrationError.noCaller(callerId) }
        return caller
    }

    /// Every caller (of `tenant` when given), oldest first.
    public func list(tenant: String? = nil) throws -> [Caller] {
        guard let tenant else {
            return try db.prepare("\(StoreSchema.callerColumns) FROM callers ORDER BY created_at, caller_id").query(row: Self.callerRow)
        }
        return try db.prepare("\(StoreSchema.callerColumns) FROM callers WHERE tenant = ? ORDER BY created_at, caller_id")
            .query([tenant], row: Self.callerRow)
    }

    /// The caller with `callerId` (only if it belongs to `tenant`, when given), or nil.
    public func caller(_ callerId: String, tenant: String? = nil) throws -> Caller? {
        let found = try db.prepare("\(StoreSchema.callerColumns) FROM callers WHERE caller_id = ?").first([callerId], row: Self.callerRow)
        return found.flatMap { tenant == nil || $0.tenant == tenant ? $0 : nil }
    }

    /// Every tenant that has callers, by name, with its callers per environment.
    public func ceiling(tenant: String) throws -> TenantCeiling {
        try db.prepare("SELECT max_rate, max_burst FROM tenant_ceilings WHERE tenant = ?").query([tenant]) { row in
            TenantCeiling(maxRate: row.isNull(0) ? nil : row.double(0), maxBurst: row.isNull(1) ? nil : row.int(1))
        }.first ?? TenantCeiling()
    }

    public func setCeiling(_ ceiling: TenantCeiling, tenant: String) throws -> Int {
        try ceiling.check(tenant: tenant)
        return try db.transaction { () throws(SQLiteError) -> Int in
            if ceiling.isNone {
                try db.prepare("DELETE FROM tenant_ceilings WHERE tenant = ?").run(tenant)
                return 0
            }
            try db.prepare(
                """
                INSERT INTO tenant_ceilings (tenant, max_rate, max_burst) VALUES (?1, ?2, ?3)
                ON CONFLICT (tenant) DO UPDATE SET max_rate = ?2, max_burst = ?3
                """
            ).run(tenant, ceiling.maxRate, ceiling.maxBurst)
            try db.prepare(
                """
                UPDATE callers SET rate = min(rate, coalesce(?2, rate)), burst = min(burst, coalesce(?3, burst))
                WHERE tenant = ?1 AND (rate > coalesce(?2, rate) OR burst > coalesce(?3, burst))
                """
            ).run(tenant, ceiling.maxRate, ceiling.maxBurst)
            return db.changes
        }
    }

    public func tenants() throws -> [(name: String, production: Int, sandbox: Int)] {
        try db.prepare(
            """
            SELECT tenant, sum(environment = 'production'), sum(environment = 'sandbox')
            FROM callers GROUP BY tenant ORDER BY tenant
            """
        ).query { row in (row.text(0) ?? "", row.int(1), row.int(2)) }
    }

    /// The keys of a caller (ids and dates only: secrets are never stored).
    public func keys(callerId: String) throws -> [StoredKey] {
        try db.prepare(
            "SELECT key_id, caller_id, secret_hash, created_at, revoked_at FROM api_keys WHERE caller_id = ? ORDER BY created_at"
        )
        .query([callerId], row: Self.keyRow)
    }

    static func callerRow(_ row: SQLiteStatement) throws -> Caller {
        guard let environment = Environment(rawValue: row.text(2) ?? "") else {
            throw StoreError.invalid("caller \(row.text(0) ?? "?") has an unknown environment")
        }
        return Caller(
            callerId: row.text(0) ?? "", name: row.text(1) ?? "", tenant: row.text(7) ?? Tenant.defaultName,
            environment: environment, roles: StoreSchema.decodeRoles(row.text(3) ?? ""), rate: row.double(4),
            burst: row.int(5), createdAt: row.int64(6), trainingCapture: row.int64(8) != 0)
    }

    static func keyRow(_ row: SQLiteStatement) -> StoredKey {
        StoredKey(
            keyId: row.text(0) ?? "", callerId: row.text(1) ?? "", secretHash: row.blob(2) ?? [],
            createdAt: row.int64(3), revokedAt: row.isNull(4) ? nil : row.int64(4))
    }
}
