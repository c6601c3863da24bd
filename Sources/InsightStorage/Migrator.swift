import InsightDomain
import SQLiteClient

/// Applies migrations in order, each in its own transaction, and refuses a database whose
/// recorded history does not match the migrations this binary carries.
public struct Migrator {
    let migrations: [Migration]

    public init(migrations: [Migration]) { self.migrations = migrations }

    /// The SQLite migrations this binary carries (`migrations/sqlite/`), in order.
    public static func bundled() throws(MigrationError) -> [Migration] {
        try Migration.ordered(embeddedMigrations["sqlite"] ?? [])
    }

    /// The history recorded in the database (empty for a new one).
    public func applied(_ db: SQLiteConnection) throws -> [AppliedMigration] {
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY, name TEXT NOT NULL,
                checksum TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT
            """)
        return try db.prepare(StoreSchema.migrationHistory)
            .query {
                AppliedMigration(
                    version: $0.int(0), name: $0.text(1) ?? "", checksum: $0.text(2) ?? "",
                    appliedAt: $0.int64(3))
            }
    }

    /// Checks the recorded history, then applies what is missing. Returns the names applied now.
    @discardableResult
    public func migrate(_ db: SQLiteConnection, now: Int64) throws -> [String] {
        try Migration.applyPending(migrations, after: try applied(db)) { migration in
            try db.transaction {
                try db.execute(migration.sql)
                try db.prepare("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)")
                    .run(migration.version, migration.name, migration.checksum, now)
            }
        }
    }
}
