internal import CSQLite

/// A prepared statement. Owns its `sqlite3_stmt` and finalizes it in `deinit`.
/// Used by one thread at a time, like the connection that made it.
public final class SQLiteStatement {
    let handle: OpaquePointer
    let database: OpaquePointer
    /// The statement's SQL text, for error messages.
    public let sql: String

    init(database: OpaquePointer, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw SQLiteConnection.error(database, code: rc, sql: sql)
        }
        self.handle = statement
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// The number of parameters (the largest index, for numbered ones).
    private var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// Resets the statement and binds `values` to parameters 1…n.
    public func bind(_ values: [any SQLiteBindable]) throws(SQLiteError) {
        try bind(values: values.map(\.sqliteValue))
    }

    /// Binds `values` to parameters 1, 2, …; the concrete form, for statements run on every
    /// request (an existential per value, its `sqliteValue` through a generic `Optional`
    /// conformance, cost ~700 instructions a value).
    public func bind(values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        // Values left from an earlier use must not leak into this one; when every parameter is
        // bound anew there are none (clearing cost as much as binding a value).
        if values.count < parameterCount { sqlite3_clear_bindings(handle) }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v): rc = sqlite3_bind_double(handle, index, v)
            case .text(let v):
                var text = v
                rc = text.withUTF8 { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { chars in
                        // An empty buffer may have no address; bind "" rather than NULL then.
                        guard let base = chars.baseAddress else { return insightd_sqlite3_bind_text(handle, index, "", 0) }
                        return insightd_sqlite3_bind_text(handle, index, base, Int32(chars.count))
                    }
                }
            case .blob(let v):
                rc = v.withUnsafeBytes {
                    // A zero-length blob must still bind as a blob, not NULL: give a valid pointer.
                    insightd_sqlite3_bind_blob(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count))
                }
            }
            guard rc == SQLITE_OK else { throw SQLiteConnection.error(database, code: rc, sql: sql) }
        }
    }

    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = SQLiteConnection.error(database, code: rc, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Binds, runs to completion and resets; for statements that return no rows.
    public func run(_ values: any SQLiteBindable...) throws(SQLiteError) {
        try run(values: values.map(\.sqliteValue))
    }

    /// `run` with concrete values (see `bind(values:)`).
    public func run(values: [SQLiteValue]) throws(SQLiteError) {
        try bind(values: values)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Binds, collects every row through `row`, and resets.
    public func query<T>(_ values: [any SQLiteBindable] = [],
                         row: (SQLiteStatement) throws -> T) throws -> [T] {
        try bind(values)
        defer { sqlite3_reset(handle) }
        var rows: [T] = []
        while try step() { rows.append(try row(self)) }
        return rows
    }

    /// Binds, returns the first row through `row` (or nil), and resets.
    public func first<T>(_ values: [any SQLiteBindable] = [],
                         row: (SQLiteStatement) throws -> T) throws -> T? {
        try bind(values)
        defer { sqlite3_reset(handle) }
        return try step() ? try row(self) : nil
    }

    /// True when column `index` of the current row is NULL.
    public func isNull(_ index: Int) -> Bool { sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL }

    /// Column `index` as an integer (0 for NULL).
    public func int64(_ index: Int) -> Int64 { sqlite3_column_int64(handle, Int32(index)) }

    /// Column `index` as an Int (0 for NULL).
    public func int(_ index: Int) -> Int { Int(sqlite3_column_int64(handle, Int32(index))) }

    /// Column `index` as a Double (0 for NULL).
    public func double(_ index: Int) -> Double { sqlite3_column_double(handle, Int32(index)) }

    /// Column `index` as text, nil for NULL.
    public func text(_ index: Int) -> String? {
        guard let pointer = sqlite3_column_text(handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes, nil for NULL.
    public func blob(_ index: Int) -> [UInt8]? {
        if isNull(index) { return nil }
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        guard count > 0, let pointer = sqlite3_column_blob(handle, Int32(index)) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
