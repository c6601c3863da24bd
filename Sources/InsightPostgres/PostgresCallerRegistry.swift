import Foundation
import InsightDomain
import PostgresClient

/// Registration of callers and keys on one connection (`insightctl`, test set-up), with the
/// same checks and answers as the SQLite `CallerRegistry`.
public final class PostgresCallerRegistry: CallerRegistration {
    let db: PostgresConnection

    public init(_ db: PostgresConnection) { self.db = db }

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
                try db.query(
                    """
                    INSERT INTO callers (caller_id, name, environment, roles, rate, burst, created_at, tenant)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                    """,
                    [
                        .text(callerId), .text(caller.name), .text(environment.rawValue), .text(StoreSchema.encode(roles)),
                        .double(rate), .int64(Int64(burst)), .int64(now), .text(tenant)
                    ])
                try insertKey(key, callerId: callerId, now: now)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw CallerRegistrationError.callerExists(callerId)
        }
        return (caller, key)
    }

    public func issueKey(callerId: String, now: Milliseconds) throws -> APIKey {
        guard try caller(callerId, tenant: nil) != nil else { throw CallerRegistrationError.noCaller(callerId) }
        let key = APIKey.generate()
        try insertKey(key, callerId: callerId, now: now)
        return key
    }

    private func insertKey(_ key: APIKey, callerId: String, now: Milliseconds) throws {
        try db.query(
            "INSERT INTO api_keys (key_id, caller_id, secret_hash, created_at) VALUES ($1, $2, $3, $4)",
            [.text(key.keyId), .text(callerId), .bytea(key.secretHash), .int64(now)])
    }

    public func revokeKey(keyId: String, now: Milliseconds) throws {
        let revoked = try db.query(
            "UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2 AND revoked_at IS NULL",
            [.int64(now), .text(keyId)])
        guard revoked.affectedRows == 1 else {
            let exists = try !db.query("SELECT 1 FROM api_keys WHERE key_id = $1", [.text(keyId)]).isEmpty
            throw exists ? CallerRegistrationError.keyAlreadyRevoked(keyId) : CallerRegistrationError.noKey(keyId)
        }
    }

    public func list(tenant: String?) throws -> [Caller] {
        guard let tenant else {
            return try db.query("\(StoreSchema.callerColumns) FROM callers ORDER BY created_at, caller_id COLLATE \"C\"")
                .map(PostgresRows.caller)
        }
        return try db.query(
            "\(StoreSchema.callerColumns) FROM callers WHERE tenant = $1 ORDER BY created_at, caller_id COLLATE \"C\"",
            [.text(tenant)]
        ).map(PostgresRows.caller)
    }

    public func caller(_ callerId: String, tenant: String?) throws -> Caller? {
        let found = try db.query("\(StoreSchema.callerColumns) FROM callers WHERE caller_id = $1", [.text(callerId)])
            .first.map(PostgresRows.caller)
        return found.flatMap { tenant == nil || $0.tenant == tenant ? $0 : nil }
    }

    public func keys(callerId: String) throws -> [StoredKey] {
        try db.query(
            """
            SELECT key_id, caller_id, secret_hash, created_at, revoked_at FROM api_keys WHERE caller_id = $1
            ORDER BY created_at, key_id COLLATE "C"
            """, [.text(callerId)]
        ).map { PostgresRows.key($0, from: 0) }
    }

    public func setQuota(callerId: String, rate: Double?, burst: Int?) throws -> Caller {
        try Caller.checkQuota(rate: rate, burst: burst)
        // A value above the tenant's ceiling is stored as the ceiling (`TenantCeiling.capping`, in SQL so that
        // the ceiling read and the update are one statement).
        let updated = try db.query(
            """
            UPDATE callers SET
                rate = LEAST(COALESCE($1::float8, rate),
                             COALESCE((SELECT max_rate FROM tenant_ceilings t WHERE t.tenant = callers.tenant), COALESCE($1::float8, rate))),
                burst = LEAST(COALESCE($2::bigint, burst),
                              COALESCE((SELECT max_burst FROM tenant_ceilings t WHERE t.tenant = callers.tenant), COALESCE($2::bigint, burst)))
            WHERE caller_id = $3
            RETURNING caller_id, name, environment, roles, rate, burst, created_at, tenant, training_capture
            """, [rate.map { .double($0) }, burst.map { .int64(Int64($0)) }, .text(callerId)])
        guard let row = updated.first else { throw CallerRegistrationError.noCaller(callerId) }
        return try PostgresRows.caller(row)
    }

    public func setTrainingCapture(callerId: String, _ on: Bool) throws -> Caller {
        let updated = try db.query(
            """
            UPDATE callers SET training_capture = $1 WHERE caller_id = $2
            RETURNING caller_id, name, environment, roles, rate, burst, created_at, tenant, training_capture
            """, [.int64(on ? 1 : 0), .text(callerId)])
        guard let row = updated.first else { throw CallerRegistrationError.noCaller(callerId) }
        return try PostgresRows.caller(row)
    }

    public func ceiling(tenant: String) throws -> TenantCeiling {
        try db.query("SELECT max_rate, max_burst FROM tenant_ceilings WHERE tenant = $1", [.text(tenant)]).first.map { row in
            TenantCeiling(maxRate: row.double(0), maxBurst: row.int64(1).map(Int.init))
        } ?? TenantCeiling()
    }

    public func setCeiling(_ ceiling: TenantCeiling, tenant: String) throws -> Int {
        try ceiling.check(tenant: tenant)
        let rate: PostgresValue? = ceiling.maxRate.map { .double($0) }, burst: PostgresValue? = ceiling.maxBurst.map { .int64(Int64($0)) }
        return try db.transaction {
            if ceiling.isNone {
                try db.query("DELETE FROM tenant_ceilings WHERE tenant = $1", [.text(tenant)])
                return 0
            }
            try db.query(
                """
                INSERT INTO tenant_ceilings (tenant, max_rate, max_burst) VALUES ($1, $2, $3)
                ON CONFLICT (tenant) DO UPDATE SET max_rate = $2, max_burst = $3
                """, [.text(tenant), rate, burst])
            return try db.query(
                """
                UPDATE callers SET rate = least(rate, $2::double precision), burst = least(burst, $3::bigint)
                WHERE tenant = $1 AND (rate > coalesce($2::double precision, rate) OR burst > coalesce($3::bigint, burst))
                """, [.text(tenant), rate, burst]
            ).affectedRows
        }
    }

    public func tenants() throws -> [(name: String, production: Int, sandbox: Int)] {
        try db.query(
            """
            SELECT tenant, count(*) FILTER (WHERE environment = 'production'), count(*) FILTER (WHERE environment = 'sandbox')
            FROM callers GROUP BY tenant ORDER BY tenant COLLATE "C"
            """
        ).map { row in (row.text(0) ?? "", Int(row.int64(1) ?? 0), Int(row.int64(2) ?? 0)) }
    }
}

/// Rows of `callers` and `api_keys` as the domain's records.
enum PostgresRows {
    static func caller(_ row: PostgresRow) throws -> Caller { try caller(row, from: 0) }

    /// The caller in the nine columns of `StoreSchema.callerColumns` starting at `first`.
    static func caller(_ row: PostgresRow, from first: Int) throws -> Caller {
        guard let environment = Environment(rawValue: row.text(first + 2) ?? "") else {
            throw PostgresStoreError("caller \(row.text(first) ?? "?") has an unknown environment")
        }
        return Caller(
            callerId: row.text(first) ?? "", name: row.text(first + 1) ?? "",
            tenant: row.text(first + 7) ?? Tenant.defaultName, environment: environment,
            roles: StoreSchema.decodeRoles(row.text(first + 3) ?? ""), rate: row.double(first + 4) ?? 0,
            burst: Int(row.int64(first + 5) ?? 0), createdAt: row.int64(first + 6) ?? 0,
            trainingCapture: (row.int64(first + 8) ?? 0) != 0)
    }

    /// The key in the five columns key_id, caller_id, secret_hash, created_at, revoked_at from `first`.
    static func key(_ row: PostgresRow, from first: Int) -> StoredKey {
        StoredKey(
            keyId: row.text(first) ?? "", callerId: row.text(first + 1) ?? "", secretHash: row.bytea(first + 2) ?? [],
            createdAt: row.int64(first + 3) ?? 0, revokedAt: row.int64(first + 4))
    }
}
