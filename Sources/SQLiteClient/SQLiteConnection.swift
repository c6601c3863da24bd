internal import CSQLite
internal import Glibc

/// Process-wide SQLite settings, applied once before the first connection opens.
private let processSettings: Void = {
    _ = insightd_sqlite3_disable_memstatus()
}()

/// One SQLite database connection. Owns its `sqlite3*` and closes it in `deinit`.
///
/// A connection is used by one thread at a time (it is opened in SQLite's multi-thread mode);
/// callers that share one across threads serialise access themselves.
public final class SQLiteConnection {
    let handle: OpaquePointer
    /// Cached statements by the address of their SQL literal, which is cheap to hash, rather
    /// than by the text itself (a few hundred bytes, hashed twice per evaluation).
    private var statementCache: [UInt: SQLiteStatement] = [:]
    /// Cached control statements (BEGIN, COMMIT, savepoints) by their short text.
    private var controlCache: [String: SQLiteStatement] = [:]
    private var savepointDepth = 0
    /// The database file's path.
    public let path: String

    /// How a transaction takes its locks.
    public enum TransactionKind: String, Sendable {
        /// Takes the write lock at once: the right choice for read-modify-write.
        case immediate = "IMMEDIATE"
        /// Takes locks as statements need them.
        case deferred = "DEFERRED"
    }

    /// Opens (creating if asked) the database at `path`. A database this call creates is
    /// readable by its owner only (0600), whatever the umask; SQLite gives its `-wal`, `-shm`
    /// and journal files the mode of the database file.
    public init(path: String, readOnly: Bool = false, create: Bool = true) throws(SQLiteError) {
        _ = processSettings
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly {
            flags |= SQLITE_OPEN_CREATE
        }
        if create && !readOnly && !path.isEmpty && path != ":memory:" && !path.hasPrefix("file:") {
            // SQLite would create it 0644 less the umask: create it private first.
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                _ = fchmod(fd, 0o600)
                close(fd)
            }
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, extendedCode: rc, message: "\(message) (\(path))", sql: nil)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        statementCache.removeAll()
        controlCache.removeAll()
        sqlite3_close_v2(handle)
    }

    static func error(_ db: OpaquePointer, code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(
            code: code & 0xFF, extendedCode: sqlite3_extended_errcode(db),
            message: String(cString: sqlite3_errmsg(db)), sql: sql)
    }

    /// Waits up to `milliseconds` for a lock held by another connection before failing with BUSY.
    public func setBusyTimeout(milliseconds: Int) {
        sqlite3_busy_timeout(handle, Int32(milliseconds))
    }

    /// Runs one or more SQL statements that take no parameters (pragmas, migrations).
    public func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw Self.error(handle, code: rc, sql: sql) }
    }

    /// A new prepared statement for `sql`.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        try SQLiteStatement(database: handle, sql: sql)
    }

    /// A prepared statement for `sql`, prepared once per connection and reused. The SQL is a
    /// literal (`StaticString`): its address names it, so a look-up hashes one word.
    public func cached(_ sql: StaticString) throws(SQLiteError) -> SQLiteStatement {
        precondition(sql.hasPointerRepresentation, "cached SQL is a string literal")
        let key = UInt(bitPattern: sql.utf8Start)
        if let statement = statementCache[key] { return statement }
        let statement = try prepare(sql.description)
        statementCache[key] = statement
        return statement
    }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the row the last successful INSERT on this connection added.
    public var lastInsertRowid: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The first column of the first row of `sql`, as text (for pragmas and checks).
    public func scalarText(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        try statement.bind([])
        return try statement.step() ? statement.text(0) : nil
    }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    public func transaction<T>(
        _ kind: TransactionKind = .immediate,
        _ body: () throws -> T
    ) throws -> T {
        try run("BEGIN \(kind.rawValue)")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    /// Runs a parameterless control statement through the statement cache: a writer issues
    /// BEGIN/SAVEPOINT/RELEASE for every job, and would otherwise reparse them each time.
    private func run(_ sql: String) throws(SQLiteError) {
        if let statement = controlCache[sql] { return try statement.run(values: []) }
        let statement = try prepare(sql)
        controlCache[sql] = statement
        try statement.run(values: [])
    }

    /// Runs `body` inside a savepoint, so that its failure undoes only its own writes
    /// within an enclosing transaction.
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        let name = "sp\(savepointDepth)"
        defer { savepointDepth -= 1 }
        try run("SAVEPOINT \(name)")
        do {
            let result = try body()
            try run("RELEASE \(name)")
            return result
        } catch {
            try? run("ROLLBACK TO \(name)")
            try? run("RELEASE \(name)")
            throw error
        }
    }
}

extension SQLiteConnection {
    /// Copies this database into a new file at `path` with SQLite's online backup API and
    /// returns the number of pages copied. By default all pages go in one step under one read
    /// transaction: in WAL mode that does not block writers, and the copy is the consistent
    /// snapshot of its start. (Copying in small steps would restart whenever another connection
    /// writes, and might never finish under steady traffic.)
    @discardableResult
    public func backup(to path: String, pagesPerStep: Int32 = -1) throws(SQLiteError) -> Int {
        let destination = try SQLiteConnection(path: path)
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw Self.error(destination.handle, code: sqlite3_errcode(destination.handle), sql: "backup")
        }
        var rc: Int32
        repeat {
            rc = sqlite3_backup_step(backup, pagesPerStep)
            if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { sqlite3_sleep(5) }
        } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
        let pages = Int(sqlite3_backup_pagecount(backup))
        let finish = sqlite3_backup_finish(backup)
        guard rc == SQLITE_DONE, finish == SQLITE_OK else {
            throw Self.error(destination.handle, code: rc == SQLITE_DONE ? finish : rc, sql: "backup")
        }
        return pages
    }
}
