import SQLiteClient

/// Opens the insightd SQLite database with the settings every connection needs.
public enum Database {
    /// Opens a read-write connection: WAL, full fsync on commit, foreign keys, busy timeout.
    public static func open(path: String, create: Bool = true) throws -> SQLiteConnection {
        let db = try SQLiteConnection(path: path, create: create)
        try configure(db)
        guard try db.scalarText("PRAGMA journal_mode=WAL") == "wal" else {
            throw StoreError.io("\(path): cannot switch to WAL mode")
        }
        return db
    }

    static func configure(_ db: SQLiteConnection) throws {
        db.setBusyTimeout(milliseconds: 5000)
        // FULL makes each commit durable against power loss, not only against a killed process;
        // group commit keeps the fsync count per request low.
        try db.execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY")
    }

    /// Page cache of the writer's connection, in KiB. SQLite's default (2 MiB) holds only the
    /// top of the indexes: consumption reports and labels look up evaluations at random, and
    /// profiling W3 showed a `pread` per B-tree level beyond the cache (8 % of its CPU).
    public static let writerCacheKiB = 65_536

    /// Opens the connection the group-commit writer owns: `open` plus a larger page cache.
    public static func openWriter(path: String) throws -> SQLiteConnection {
        let db = try open(path: path)
        try db.execute("PRAGMA cache_size=-\(writerCacheKiB)")
        return db
    }

    /// Opens the writer's connection and applies the bundled migrations. Returns the names
    /// applied now.
    public static func openMigrated(path: String, now: Int64) throws -> (SQLiteConnection, [String]) {
        let db = try openWriter(path: path)
        let applied = try Migrator(migrations: Migration.bundled()).migrate(db, now: now)
        return (db, applied)
    }
}
