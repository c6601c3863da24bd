import InsightDomain
import PostgresClient

/// The registered hash key ids on PostgreSQL. Used at start and on a key rotation, on a read
/// connection of the pool; the table lock serialises instances starting together, so two of
/// them with different keyrings cannot both register theirs in an empty store.
public struct PostgresHashKeyRegistry: HashKeyRegistry {
    let reads: PostgresReadPool

    public func reconcile(now: Milliseconds, _ decide: (Set<String>) throws -> [String]) throws {
        try reads.read { db in
            try db.transaction {
                try db.execute("LOCK TABLE hash_keys IN SHARE ROW EXCLUSIVE MODE")
                let registered = Set(try db.query("SELECT key_id FROM hash_keys").map { $0.text(0) ?? "" })
                for keyId in try decide(registered) {
                    _ = try db.query(
                        "INSERT INTO hash_keys (key_id, registered_at) VALUES ($1, $2)",
                        [.text(keyId), .int64(now)])
                }
            }
        }
    }
}
