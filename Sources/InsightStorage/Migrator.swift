import Crypto
import SQLiteClient

/// One versioned schema change from `migrations/sqlite/`, built into the binary.
public struct Migration: Sendable, Equatable {
    /// The file name without extension, e.g. "0001_initial".
    public let name: String
    /// The leading number of the name: the order of application.
    public let version: Int
    public let sql: String
    /// SHA-256 of the SQL text, recorded when applied; an edited migration is refused.
    public var checksum: String { SHA256.hexDigest(Array(sql.utf8)) }

    public init(name: String, sql: String) throws(StoreError) {
        guard let version = Int(name.prefix { $0.isNumber }), version > 0 else {
            throw StoreError.migration("migration \(name) does not start with a version number")
        }
        self.name = name
        self.version = version
        self.sql = sql
    }

    /// The migrations this binary carries for `engine` (a folder of `migrations/`), in order.
    public static func bundled(engine: String = "sqlite") throws(StoreError) -> [Migration] {
        var result: [Migration] = []
        for entry in embeddedMigrations[engine] ?? [] { result.append(try Migration(name: entry.name, sql: entry.sql)) }
        return result.sorted { $0.version < $1.version }
    }
}

/// A migration that was applied, as recorded in `schema_migrations`.
public struct AppliedMigration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let checksum: String
    public let appliedAt: Int64
}

/// Applies migrations in order, each in its own transaction, and refuses a database whose
/// recorded history does not match the migrations this binary carries.
public struct Migrator {
    let migrations: [Migration]

    public init(migrations: [Migration]) { self.migrations = migrations }

    /// The history recorded in the database (empty for a new one).
    public func applied(_ db: SQLiteConnection) throws -> [AppliedMigration] {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY, name TEXT NOT NULL,
                checksum TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT
            """)
        return try db.prepare("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version")
            .query { AppliedMigration(version: $0.int(0), name: $0.text(1) ?? "", checksum: $0.text(2) ?? "",
                                      appliedAt: $0.int64(3)) }
    }

    /// Checks the recorded history, then applies what is missing. Returns the names applied now.
    @discardableResult
    public func migrate(_ db: SQLiteConnection, now: Int64) throws -> [String] {
        let history = try applied(db)
        try verify(history)
        var appliedNow: [String] = []
        for migration in migrations where !history.contains(where: { $0.version == migration.version }) {
            do {
                try db.transaction {
                    try db.execute(migration.sql)
                    try db.prepare("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)")
                        .run(migration.version, migration.name, migration.checksum, now)
                }
            } catch {
                throw StoreError.migration("migration \(migration.name) failed: \(error)")
            }
            appliedNow.append(migration.name)
        }
        return appliedNow
    }

    /// Throws unless every recorded migration is one of ours, unchanged.
    public func verify(_ history: [AppliedMigration]) throws(StoreError) {
        for record in history {
            guard let migration = migrations.first(where: { $0.version == record.version }) else {
                throw StoreError.migration(
                    "the database has migration \(record.name), which this binary does not know: it was written by a newer insightd")
            }
            guard migration.checksum == record.checksum else {
                throw StoreError.migration(
                    "migration \(record.name) was edited after it was applied (recorded checksum \(record.checksum.prefix(12))…, now \(migration.checksum.prefix(12))…); restore the original file and add a new migration instead")
            }
        }
    }
}
