import InsightDomain
import PostgresClient

/// Applies migrations in order, each in its own transaction, and refuses a database whose
/// recorded history does not match the migrations this binary carries — as the SQLite
/// `Migrator` does. The whole run holds a session advisory lock, so that instances starting
/// together on one database apply each migration once: the others wait for the lock, then read
/// the history the first one recorded and find nothing to do.
public struct PostgresMigrator {
    /// The advisory lock key of a migration run: "insightd" in ASCII.
    public static let lockKey: Int64 = 0x696E_7369_6768_7464

    let migrations: [Migration]

    public init(migrations: [Migration]) { self.migrations = migrations }

    /// The PostgreSQL migrations this binary carries (`migrations/postgresql/`), in order.
    public static func bundled() throws(MigrationError) -> [Migration] {
        try Migration.ordered(embeddedMigrations["postgresql"] ?? [])
    }

    /// The history recorded in the database (empty for a new one).
    public func applied(_ db: PostgresConnection) throws -> [AppliedMigration] {
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version bigint PRIMARY KEY, name text NOT NULL,
                checksum text NOT NULL, applied_at bigint NOT NULL)
            """)
        return try db.query(StoreSchema.migrationHistory)
            .map { row in
                AppliedMigration(
                    version: Int(row.int64(0) ?? 0), name: row.text(1) ?? "",
                    checksum: row.text(2) ?? "", appliedAt: row.int64(3) ?? 0)
            }
    }

    /// Takes the advisory lock (waiting for another instance's run to end), checks the
    /// recorded history, applies what is missing, and releases the lock. Returns the names
    /// applied now.
    @discardableResult
    public func migrate(_ db: PostgresConnection, now: Int64) throws -> [String] {
        try db.query("SELECT pg_advisory_lock($1)", [.int64(Self.lockKey)])
        defer { if db.isConnected { _ = try? db.advisoryUnlock(Self.lockKey) } }
        // Two sessions racing on CREATE TABLE IF NOT EXISTS can both miss the table and one fail
        // on the catalog's unique index; under the lock only one creates it.
        return try Migration.applyPending(migrations, after: try applied(db)) { migration in
            try db.transaction {
                try db.execute(migration.sql)
                try db.query(
                    "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
                    [
                        .int64(Int64(migration.version)), .text(migration.name), .text(migration.checksum),
                        .int64(now)
                    ])
            }
        }
    }
}
