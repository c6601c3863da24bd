import InsightDomain
import SQLiteClient

/// The registered hash key ids in the SQLite store. Used at start and on a key rotation, so each
/// call opens its own short-lived connection; `BEGIN IMMEDIATE` serialises it with the writer.
public struct SQLiteHashKeyRegistry: HashKeyRegistry {
    let path: String

    public init(path: String) { self.path = path }

    public func reconcile(now: Milliseconds, _ decide: (Set<String>) throws -> [String]) throws {
        let db = try Database.open(path: path, create: false)
        try db.transaction(.immediate) {
            let registered = Set(try db.prepare("SELECT key_id FROM hash_keys").query { $0.text(0) ?? "" })
            for keyId in try decide(registered) {
                try db.prepare("INSERT INTO hash_keys (key_id, registered_at) VALUES (?, ?)").run(keyId, now)
            }
        }
    }
}
