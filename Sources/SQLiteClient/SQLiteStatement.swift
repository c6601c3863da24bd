internal import CSQLite

/// A prepared statement. Owns its `sqlite3_stmt` and finalizes it in `deinit`.
/// Used by one thread at a time, like the connection that made it.
public final class SQLiteStatement {
    let handle: OpaquePointer
    let database: OpaquePointer
    /// The statement's SQL text, for error messages.
    public let sql: String
    /// The bytes of the text and blob parameters bound now. SQLite reads bound values at each
    /// step, so they are bound without a copy (`SQLITE_STATIC`) from here, and stay here
    /// unchanged until the next binding: SQLite's own copy cost a `malloc` and a `free` per
    /// value, most of the binding's cost on the writer thread.
    private let parameterBytes = ParameterBytes()

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
    /// request (it avoids an existential per value and a `sqliteValue` reached through a generic
    /// `Optional` conformance).
    public func bind(values: [SQLiteValue]) throws(SQLiteError) {
        try bind(count: values.count) { binder in
            // Values are read in place (a `for … in` copy retained each string and array once more).
            values.withUnsafeBufferPointer { values in
                for offset in values.indices { binder.value(values[offset]) }
            }
        }
    }

    /// Resets the statement and binds parameters 1, 2, … in the order `binding` gives them,
    /// straight from the caller's values: no array of `SQLiteValue`s is built, copied and
    /// released (on the writer thread, for every evaluation). `count` is how many it binds.
    public func bind(count: Int, _ binding: (inout SQLiteBinder) -> Void) throws(SQLiteError) {
        sqlite3_reset(handle)
        // Values left from an earlier use must not leak into this one; when every parameter is
        // bound anew there are none (clearing cost as much as binding a value).
        if count < parameterCount { sqlite3_clear_bindings(handle) }
        parameterBytes.removeAll()
        var binder = SQLiteBinder(handle: handle, bytes: parameterBytes)
        binding(&binder)
        binder.bindBytes()
        if binder.result != SQLITE_OK { throw SQLiteConnection.error(database, code: binder.result, sql: sql) }
        guard binder.bound == count else {
            // A caller's mistake, not bad input: refused, so that no value of an earlier use is
            // left bound in its place.
            throw SQLiteError(
                code: SQLITE_MISUSE, extendedCode: SQLITE_MISUSE,
                message: "bound \(binder.bound) parameters, announced \(count)", sql: sql)
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

    /// `run` binding straight from the values (see `bind(count:_:)`).
    public func run(count: Int, _ binding: (inout SQLiteBinder) -> Void) throws(SQLiteError) {
        try bind(count: count, binding)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Binds, collects every row through `row`, and resets.
    public func query<T>(
        _ values: [any SQLiteBindable] = [],
        row: (SQLiteStatement) throws -> T
    ) throws -> [T] {
        try bind(values)
        defer { sqlite3_reset(handle) }
        var rows: [T] = []
        while try step() { rows.append(try row(self)) }
        return rows
    }

    /// Binds, returns the first row through `row` (or nil), and resets.
    public func first<T>(
        _ values: [any SQLiteBindable] = [],
        row: (SQLiteStatement) throws -> T
    ) throws -> T? {
        try bind(values)
        defer { sqlite3_reset(handle) }
        return try step() ? try row(self) : nil
    }

    /// True when column `index` of the current row is NULL.
    public func isNull(_ index: Int) -> Bool { sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL }

    /// Column `index` as an integer (0 for NULL).
    public func int64(_ index: Int) -> Int64 { sqlite3_column_int64(handle, Int32(index)) }

    /// Column `index` as an integer, nil for NULL.
    public func optionalInt64(_ index: Int) -> Int64? { isNull(index) ? nil : int64(index) }

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

/// Binds a statement's parameters one after another (see `SQLiteStatement.bind(count:_:)`).
/// The first failure is kept and later bindings are skipped. Text and blobs are copied into
/// the statement's `ParameterBytes` and bound from there once all are in, so that growing the
/// buffer cannot move bytes already bound.
public struct SQLiteBinder {
    fileprivate let handle: OpaquePointer
    fileprivate let bytes: ParameterBytes
    fileprivate var bound: Int32 = 0
    fileprivate var result = SQLITE_OK

    fileprivate init(handle: OpaquePointer, bytes: ParameterBytes) {
        self.handle = handle
        self.bytes = bytes
    }

    private mutating func next(_ bind: (OpaquePointer, Int32) -> Int32) {
        guard result == SQLITE_OK else { return }
        bound += 1
        result = bind(handle, bound)
    }

    private mutating func later(_ buffer: UnsafeRawBufferPointer, isText: Bool) {
        guard result == SQLITE_OK else { return }
        bound += 1
        bytes.add(buffer, parameter: bound, isText: isText)
    }

    /// Binds the text and blobs, now that their bytes stay where they are.
    fileprivate mutating func bindBytes() {
        if result == SQLITE_OK { result = bytes.bind(to: handle) }
    }

    public mutating func null() { next { sqlite3_bind_null($0, $1) } }

    public mutating func integer(_ value: Int64) { next { sqlite3_bind_int64($0, $1, value) } }

    public mutating func integer(_ value: Int64?) {
        if let value { integer(value) } else { null() }
    }

    public mutating func real(_ value: Double) { next { sqlite3_bind_double($0, $1, value) } }

    public mutating func text(_ value: String) {
        if value.utf8.withContiguousStorageIfAvailable({ later(UnsafeRawBufferPointer($0), isText: true) }) == nil {
            var copy = value
            copy.withUTF8 { later(UnsafeRawBufferPointer($0), isText: true) }
        }
    }

    public mutating func text(_ value: String?) {
        if let value { text(value) } else { null() }
    }

    public mutating func blob(_ value: [UInt8]) {
        value.withUnsafeBytes { later($0, isText: false) }
    }

    public mutating func blob(_ value: [UInt8]?) {
        if let value { blob(value) } else { null() }
    }

    public mutating func value(_ value: SQLiteValue) {
        switch value {
        case .null: null()
        case .integer(let v): integer(v)
        case .real(let v): real(v)
        case .text(let v): text(v)
        case .blob(let v): blob(v)
        }
    }
}

/// The text and blob parameters of one statement's current binding: their bytes, one after
/// another in memory this class owns (freed in `deinit`), and which parameter each is. Kept
/// between bindings, so a binding allocates nothing once the buffer is large enough; a statement
/// that never binds text or blobs never allocates it.
final class ParameterBytes {
    private struct Parameter {
        let index: Int32
        let offset: Int
        let count: Int
        let isText: Bool
    }

    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    private var count = 0
    /// Unchecked exclusivity: the statement using this is used by one thread at a time and
    /// nothing here calls out while appending, so no access can overlap, and the runtime's
    /// dynamic check would be paid on every access on the writer thread.
    @exclusivity(unchecked) private var parameters: [Parameter] = []

    init() {
        capacity = 0
        base = UnsafeMutableRawPointer.allocate(byteCount: 0, alignment: 8)
    }

    deinit { base.deallocate() }

    func removeAll() {
        count = 0
        parameters.removeAll(keepingCapacity: true)
    }

    /// Copies `buffer` in as parameter `index` (kept as an offset: growing moves the bytes).
    func add(_ buffer: UnsafeRawBufferPointer, parameter index: Int32, isText: Bool) {
        if count + buffer.count > capacity {
            let grown = max(capacity * 2, count + buffer.count, 256)
            let moved = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 8)
            moved.copyMemory(from: base, byteCount: count)
            base.deallocate()
            base = moved
            capacity = grown
        }
        if let source = buffer.baseAddress { (base + count).copyMemory(from: source, byteCount: buffer.count) }
        parameters.append(Parameter(index: index, offset: count, count: buffer.count, isText: isText))
        count += buffer.count
    }

    /// Binds every parameter added without a copy (`SQLITE_STATIC`, a nil destructor): the
    /// bytes stay here, unchanged, until the statement's next binding. Never a null pointer,
    /// which SQLite would bind as NULL instead of "" or an empty blob.
    func bind(to handle: OpaquePointer) -> Int32 {
        for parameter in parameters {
            let start = base + parameter.offset
            let rc =
                parameter.isText
                ? sqlite3_bind_text(handle, parameter.index, start.assumingMemoryBound(to: CChar.self), Int32(parameter.count), nil)
                : sqlite3_bind_blob(handle, parameter.index, start, Int32(parameter.count), nil)
            if rc != SQLITE_OK { return rc }
        }
        return SQLITE_OK
    }
}
