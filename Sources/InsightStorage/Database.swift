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

    /// Opens the database and applies the bundled migrations. Returns the names applied now.
    public static func openMigrated(path: String, now: Int64) throws -> (SQLiteConnection, [String]) {
        let db = try open(path: path)
        let applied = try Migrator(migrations: Migration.bundled()).migrate(db, now: now)
        return (db, applied)
    }
}
