import Crypto

/// One versioned schema change from `migrations/<engine>/`, built into the binary. Both engines
/// carry the same names and numbering, and each migrator applies and checks them alike.
public struct Migration: Sendable, Equatable {
    /// The file name without extension, e.g. "0001_initial".
    public let name: String
    /// The leading number of the name: the order of application.
    public let version: Int
    public let sql: String
    /// SHA-256 of the SQL text, recorded when applied; an edited migration is refused.
    public var checksum: String { SHA256.hexDigest(Array(sql.utf8)) }

    public init(name: String, sql: String) throws(MigrationError) {
        guard let version = Int(name.prefix { $0.isNumber }), version > 0 else {
            throw MigrationError("migration \(name) does not start with a version number")
        }
        self.name = name
        self.version = version
        self.sql = sql
    }

    /// The migrations of one engine as the build embedded them (`EmbedMigrations`), in order.
    public static func ordered(_ embedded: [(name: String, sql: String)]) throws(MigrationError) -> [Migration] {
        var result: [Migration] = []
        for entry in embedded { result.append(try Migration(name: entry.name, sql: entry.sql)) }
        return result.sorted { $0.version < $1.version }
    }

    /// Those of `migrations` that `history` lacks, in order, after checking that every recorded
    /// migration is one of them, unchanged: a database written by a newer binary, or under an
    /// edited migration, is refused.
    public static func pending(_ migrations: [Migration], after history: [AppliedMigration]) throws(MigrationError)
        -> [Migration]
    {
        for record in history {
            guard let migration = migrations.first(where: { $0.version == record.version }) else {
                throw MigrationError(
                    "the database has migration \(record.name), which this binary does not know: it was written by a newer insightd")
            }
            guard migration.checksum == record.checksum else {
                throw MigrationError(
                    "migration \(record.name) was edited after it was applied (recorded checksum \(record.checksum.prefix(12))…, now \(migration.checksum.prefix(12))…); restore the original file and add a new migration instead"
                )
            }
        }
        return migrations.filter { migration in !history.contains { $0.version == migration.version } }
    }

    /// What each engine's migrator does with its connection: checks `history` (`pending`), then
    /// hands each pending migration, in order, to `apply`, which runs its SQL and records it in
    /// `schema_migrations` in one transaction. Answers the names applied; a failure stops the
    /// run and is reported with its migration's name.
    public static func applyPending(
        _ migrations: [Migration], after history: [AppliedMigration],
        _ apply: (Migration) throws -> Void
    ) throws -> [String] {
        var appliedNow: [String] = []
        for migration in try pending(migrations, after: history) {
            do {
                try apply(migration)
            } catch {
                throw MigrationError("migration \(migration.name) failed: \(error)")
            }
            appliedNow.append(migration.name)
        }
        return appliedNow
    }
}

/// A migration that was applied, as recorded in `schema_migrations`.
public struct AppliedMigration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let checksum: String
    public let appliedAt: Int64

    public init(version: Int, name: String, checksum: String, appliedAt: Int64) {
        self.version = version
        self.name = name
        self.checksum = checksum
        self.appliedAt = appliedAt
    }
}

/// A migration that could not be applied, or a database the binary refuses. Safe to log.
public struct MigrationError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
