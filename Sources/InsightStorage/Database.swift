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

    /// Page cache of the daemon's writer connection, in KiB. SQLite's default (2 MiB) holds only
    /// the top of the indexes, and consumption reports and labels look up evaluations at random:
    /// each B-tree level beyond the cache would cost a `pread` on the writer thread, which every
    /// write waits for (docs/performance.md, "Figures behind the code").
    public static let writerCacheKiB = 65_536

    /// Opens a read-write connection (with a page cache of `cacheKiB`, when given) and applies
    /// the bundled migrations. Returns the names applied now.
    public static func openMigrated(path: String, now: Int64, cacheKiB: Int? = nil) throws -> (SQLiteConnection, [String]) {
        let db = try open(path: path)
        if let cacheKiB { try db.execute("PRAGMA cache_size=-\(cacheKiB)") }
        let applied = try Migrator(migrations: Migrator.bundled()).migrate(db, now: now)
        return (db, applied)
    }
}
