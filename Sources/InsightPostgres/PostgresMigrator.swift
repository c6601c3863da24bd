import Crypto
import PostgresClient

/// One versioned schema change from `migrations/postgresql/`, built into the binary. Same
/// names and numbering as the SQLite ones, so that both engines end at the same schema.
public struct PostgresMigration: Sendable, Equatable {
    /// The file name without extension, e.g. "0001_initial".
    public let name: String
    /// The leading number of the name: the order of application.
    public let version: Int
    public let sql: String
    /// SHA-256 of the SQL text, recorded when applied; an edited migration is refused.
    public var checksum: String { SHA256.hexDigest(Array(sql.utf8)) }

    public init(name: String, sql: String) throws(PostgresMigrationError) {
        guard let version = Int(name.prefix { $0.isNumber }), version > 0 else {
            throw PostgresMigrationError("migration \(name) does not start with a version number")
        }
        self.name = name
        self.version = version
        self.sql = sql
    }

    /// The PostgreSQL migrations this binary carries, in order.
    public static func bundled() throws(PostgresMigrationError) -> [PostgresMigration] {
        var result: [PostgresMigration] = []
        for entry in embeddedMigrations["postgresql"] ?? [] {
            result.append(try PostgresMigration(name: entry.name, sql: entry.sql))
        }
        return result.sorted { $0.version < $1.version }
    }
}

/// A migration that could not be applied, or a database the binary refuses. Safe to log.
public struct PostgresMigrationError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A migration that was applied, as recorded in `schema_migrations`.
public struct AppliedPostgresMigration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let checksum: String
    public let appliedAt: Int64
}

/// Applies migrations in order, each in its own transaction, and refuses a database whose
/// recorded history does not match the migrations this binary carries — as the SQLite
/// `Migrator` does. The whole run holds a session advisory lock, so that instances starting
/// together on one database apply each migration once: the others wait for the lock, then read
/// the history the first one recorded and find nothing to do.
public struct PostgresMigrator {
    /// The advisory lock key of a migration run: "insightd" in ASCII.
    public static let lockKey: Int64 = 0x696E_7369_6768_7464

    let migrations: [PostgresMigration]

    public init(migrations: [PostgresMigration]) { self.migrations = migrations }

    /// The history recorded in the database (empty for a new one).
    public func applied(_ db: PostgresConnection) throws -> [AppliedPostgresMigration] {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version bigint PRIMARY KEY, name text NOT NULL,
                checksum text NOT NULL, applied_at bigint NOT NULL)
            """)
        return try db.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version")
            .map { row in
                AppliedPostgresMigration(version: Int(row.int64(0) ?? 0), name: row.text(1) ?? "",
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
        let history = try applied(db)
        try verify(history)
        var appliedNow: [String] = []
        for migration in migrations where !history.contains(where: { $0.version == migration.version }) {
            do {
                try db.transaction {
                    try db.execute(migration.sql)
                    try db.query("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
                                 [.int64(Int64(migration.version)), .text(migration.name), .text(migration.checksum),
                                  .int64(now)])
                }
            } catch {
                throw PostgresMigrationError("migration \(migration.name) failed: \(error)")
            }
            appliedNow.append(migration.name)
        }
        return appliedNow
    }

    /// Throws unless every recorded migration is one of ours, unchanged.
    public func verify(_ history: [AppliedPostgresMigration]) throws(PostgresMigrationError) {
        for record in history {
            guard let migration = migrations.first(where: { $0.version == record.version }) else {
                throw PostgresMigrationError(
                    "the database has migration \(record.name), which this binary does not know: it was written by a newer insightd")
            }
            guard migration.checksum == record.checksum else {
                throw PostgresMigrationError(
                    "migration \(record.name) was edited after it was applied (recorded checksum \(record.checksum.prefix(12))…, now \(migration.checksum.prefix(12))…); restore the original file and add a new migration instead")
            }
        }
    }
}
