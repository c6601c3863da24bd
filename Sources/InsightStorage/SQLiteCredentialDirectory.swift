import InsightDomain
import SQLiteClient
import Synchronization

/// Key lookup for authentication over its own connection. Lookups are rare (the API caches
/// results for a few seconds), so one connection behind a lock is enough.
public final class SQLiteCredentialDirectory: CredentialDirectory {
    private let connection: Mutex<SQLiteConnection>

    public init(path: String) throws {
        let db = try Database.open(path: path, create: false)
        connection = Mutex(db)
    }

    public func credential(keyId: String) throws -> (key: StoredKey, caller: Caller)? {
        try connection.withLock { db in
            let sql: StaticString = """
                SELECT k.key_id, k.caller_id, k.secret_hash, k.created_at, k.revoked_at,
                       c.caller_id, c.name, c.environment, c.roles, c.rate, c.burst, c.created_at, c.tenant,
                       c.training_capture
                FROM api_keys k JOIN callers c ON c.caller_id = k.caller_id WHERE k.key_id = ?
                """
            return try db.cached(sql).first([keyId]) { row in
                let key = CallerRegistry.keyRow(row)
                guard let environment = Environment(rawValue: row.text(7) ?? "") else {
                    throw StoreError.invalid("caller \(key.callerId) has an unknown environment")
                }
                let caller = Caller(
                    callerId: row.text(5) ?? "", name: row.text(6) ?? "",
                    tenant: row.text(12) ?? Tenant.defaultName, environment: environment,
                    roles: StoreSchema.decodeRoles(row.text(8) ?? ""), rate: row.double(9),
                    burst: row.int(10), createdAt: row.int64(11),
                    trainingCapture: row.int64(13) != 0)
                return (key, caller)
            }
        }
    }
}
