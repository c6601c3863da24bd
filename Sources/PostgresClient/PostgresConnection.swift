internal import CLibPQ
internal import Glibc

/// One PostgreSQL connection. Owns its `PGconn*` and closes it in `deinit`.
///
/// A connection is used by one thread at a time and is not `Sendable`: it holds the state of
/// one protocol conversation (a transaction, a pipeline, the prepared statements), which two
/// threads could not share even under a lock without interleaving their statements. Hand it to
/// the thread that owns it (`sending`, or a `Mutex`), as with `SQLiteConnection`.
///
/// Calls block until the server answers. A broken connection stays broken: every later call
/// throws `.connectionLost`; open a new one.
public final class PostgresConnection {
    let handle: OpaquePointer
    /// Cuts the URL's password out of every message libpq gives this connection.
    private let redaction: Redaction
    /// The SQL of each statement prepared on this connection, by its caller-chosen name.
    private var prepared: [String: String] = [:]

    /// Connects to `url`, a libpq connection URI
    /// (`postgres://user:password@host:port/db?sslmode=…`) or key/value string.
    /// `connectTimeout` (whole seconds, at least 2 by libpq's rule) overrides any
    /// `connect_timeout` the URL gives. `defaults` are further libpq connection keywords
    /// (`keepalives_idle`, `tcp_user_timeout`, `application_name`, …) that the URL may override.
    /// The error never contains the URL's password: a URI is first read strictly
    /// (`PostgresURL`), and one libpq would misread (a password holding an unescaped `/` or `@`)
    /// is refused before libpq sees it, since libpq would quote pieces of it.
    public init(url: String, connectTimeout: Int = 5, defaults: [(keyword: String, value: String)] = [])
        throws(PostgresError)
    {
        if PostgresURL.hasScheme(url) {
            do { _ = try PostgresURL(parsing: url) } catch {
                throw PostgresError(kind: .connect, message: "the connection URI \(error)")
            }
        }
        let redaction = Redaction(connectionString: url)
        // Read in order, the last value of a keyword winning: the defaults, then what the URL
        // sets, then the connect timeout.
        let keys = defaults.map(\.keyword) + ["dbname", "connect_timeout"]
        let values = defaults.map(\.value) + [url, String(max(connectTimeout, 2))]
        let connection = withCStrings(keys) { keys in
            withCStrings(values) { values in
                // expand_dbname = 1: the first `dbname` is read as a URI or key/value string;
                // the settings after it override what it sets.
                PQconnectdbParams(keys, values, 1)
            }
        }
        guard let connection else {
            throw PostgresError(kind: .connect, message: "out of memory")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = redaction.apply(Self.libpqMessage(connection))
            PQfinish(connection)
            throw PostgresError(kind: .connect, message: message)
        }
        insightd_pq_silence_notices(connection)
        self.handle = connection
        self.redaction = redaction
    }

    deinit { PQfinish(handle) }

    /// Set when a pipeline could not be sent whole: the connection is unusable from then on.
    var abandoned = false

    /// False once the connection has broken (or been given up after a pipeline that could not
    /// be sent whole).
    public var isConnected: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

    /// Reads whatever the server sent while the connection was idle, without a round trip:
    /// a server that shut down or closed the session has sent its notice or closed the
    /// socket, and the connection then reports itself broken. False when it is broken.
    public func poll() -> Bool {
        guard isConnected else { return false }
        _ = PQconsumeInput(handle)
        return isConnected
    }

    /// The server's version as a number (150018 for 15.18).
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// True inside a transaction block (idle in it, or in a failed one).
    public var inTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    // MARK: Queries

    /// Runs `sql` without parameters: one statement or several separated by semicolons
    /// (a migration). Several run as one implicit transaction unless they contain their own
    /// BEGIN/COMMIT.
    public func execute(_ sql: String) throws(PostgresError) {
        _ = try check(PQexec(handle, sql))
    }

    /// Runs one statement with `parameters` (`$1`, `$2`, …; nil is NULL) and returns its rows.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue?] = []) throws(PostgresError) -> PostgresResult {
        let encoded = EncodedParameters(parameters)
        let result = encoded.withArrays { types, values, lengths, formats in
            PQexecParams(handle, sql, encoded.count, types, values, lengths, formats, 0)
        }
        return try check(result)
    }

    // MARK: Prepared statements

    /// The statement `sql` prepared under `name` on this connection: prepared on the first
    /// call, then taken from the connection's cache without a round trip. A name stands for one
    /// SQL text for the connection's life (preparing another text under it is a programming
    /// error). Parameter types are inferred by the server from the SQL.
    public func prepare(_ name: String, _ sql: String) throws(PostgresError) -> PostgresStatement {
        if let existing = prepared[name] {
            precondition(existing == sql, "statement \(name) is already prepared with other SQL")
            return PostgresStatement(name: name)
        }
        _ = try check(PQprepare(handle, name, sql, 0, nil))
        prepared[name] = sql
        return PostgresStatement(name: name)
    }

    /// Runs a prepared statement with `parameters`.
    @discardableResult
    public func query(_ statement: PostgresStatement, _ parameters: [PostgresValue?] = []) throws(PostgresError)
        -> PostgresResult
    {
        precondition(prepared[statement.name] != nil, "statement \(statement.name) is not prepared on this connection")
        let encoded = EncodedParameters(parameters)
        let result = encoded.withArrays { _, values, lengths, formats in
            PQexecPrepared(handle, statement.name, encoded.count, values, lengths, formats, 0)
        }
        return try check(result)
    }

    /// Whether `statement` has been prepared on this connection.
    func isPrepared(_ statement: PostgresStatement) -> Bool { prepared[statement.name] != nil }

    // MARK: Transactions

    /// Runs `body` in a transaction (BEGIN … COMMIT): committed if it returns, rolled back if it
    /// throws. A COMMIT the server turns into a rollback (a statement failed inside and `body`
    /// caught the error) throws `.server` with SQLSTATE 25P02. Not nestable.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        guard !inTransaction else {
            throw PostgresError(kind: .client, message: "transaction already in progress")
        }
        try execute("BEGIN")
        let value: T
        do {
            value = try body()
        } catch {
            if isConnected { try? execute("ROLLBACK") }
            throw error
        }
        let commit = try check(PQexec(handle, "COMMIT"))
        guard commit.commandTag == "COMMIT" else {
            throw PostgresError(
                kind: .server, sqlState: "25P02",
                message: "transaction rolled back: a statement in it failed")
        }
        return value
    }

    // MARK: Advisory locks

    /// Takes the session-level advisory lock `key` if no other session holds it
    /// (`pg_try_advisory_lock`); true when taken. Held until `advisoryUnlock` or the end of
    /// the session; a session may take it several times and must unlock it as often.
    public func tryAdvisoryLock(_ key: Int64) throws(PostgresError) -> Bool {
        try query("SELECT pg_try_advisory_lock($1)", [.int64(key)]).first?.bool(0) == true
    }

    /// Releases the advisory lock `key` once (`pg_advisory_unlock`); false when this session
    /// did not hold it.
    @discardableResult
    public func advisoryUnlock(_ key: Int64) throws(PostgresError) -> Bool {
        try query("SELECT pg_advisory_unlock($1)", [.int64(key)]).first?.bool(0) == true
    }

    // MARK: Results and errors

    /// The result of a synchronous call, or its error.
    func check(_ result: OpaquePointer?) throws(PostgresError) -> PostgresResult {
        guard let result else { throw connectionError() }
        let owned = PostgresResult(handle: result)
        if let failure = withExtendedLifetime(owned, { self.failure(of: owned.handle) }) { throw failure }
        return owned
    }

    /// nil for a successful result, else its error.
    func failure(of result: OpaquePointer) -> PostgresError? {
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            return nil
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR:
            return error(from: result)
        case PGRES_PIPELINE_ABORTED:
            return PostgresError(kind: .pipelineAborted, message: "an earlier query of the pipeline failed")
        default:
            return PostgresError(kind: .client, message: "unexpected result: \(String(cString: PQresStatus(status)))")
        }
    }

    /// The error an error result carries: a server error with its SQLSTATE, or a lost
    /// connection (libpq's own errors have no SQLSTATE).
    func error(from result: OpaquePointer) -> PostgresError {
        guard let state = PQresultErrorField(result, insightd_pg_diag_sqlstate) else {
            if !isConnected { return connectionError() }
            return PostgresError(kind: .client, message: redaction.apply(Self.trimmed(String(cString: PQresultErrorMessage(result)))))
        }
        let primary = PQresultErrorField(result, insightd_pg_diag_message_primary).map { String(cString: $0) }
        let constraint = PQresultErrorField(result, insightd_pg_diag_constraint_name).map { String(cString: $0) }
        return PostgresError(
            kind: .server, sqlState: String(cString: state), message: redaction.apply(primary ?? ""),
            constraint: constraint)
    }

    func connectionError() -> PostgresError {
        PostgresError(kind: isConnected ? .client : .connectionLost, message: redaction.apply(Self.libpqMessage(handle)))
    }

    private static func libpqMessage(_ connection: OpaquePointer) -> String {
        trimmed(String(cString: PQerrorMessage(connection)))
    }

    /// libpq's messages end with a newline and may span indented lines: one line of them.
    private static func trimmed(_ message: String) -> String {
        message.split(whereSeparator: \.isNewline)
            .map { $0.drop(while: \.isWhitespace) }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }
}

/// A statement prepared on a connection under a caller-chosen name (`PostgresConnection.prepare`).
public struct PostgresStatement: Sendable, Hashable {
    public let name: String
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var storage: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    defer { storage.forEach { free($0) } }
    storage.append(nil)
    return storage.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
    }
}
