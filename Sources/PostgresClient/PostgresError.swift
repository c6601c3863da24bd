/// A failed PostgreSQL call.
///
/// `description` carries the kind, the SQLSTATE, the server's primary message and the
/// constraint name; never bound parameters and never the connection URL's password. The
/// server's primary message may still quote a value it could not read (`invalid input syntax
/// for type bigint: "…"`): where parameters come from callers, log `sqlState` and `constraint`
/// rather than `message`. The detail field (which quotes the duplicate key of a unique
/// violation) is not kept.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// No connection could be made (refused, timed out, authentication failed, bad URL).
        case connect
        /// The connection broke during a call, or was already broken. Whether a statement sent
        /// before the break (a COMMIT, a pipeline's sync) took effect is unknown.
        case connectionLost
        /// The server refused the statement: `sqlState` says why.
        case server
        /// In a pipeline: not run, because an earlier query of the same pipeline failed.
        case pipelineAborted
        /// The client was used wrongly or libpq answered something this module does not handle
        /// (a COPY, a nested transaction).
        case client
    }

    public let kind: Kind
    /// The five-character SQLSTATE (`23505`, `42601`, `40001`, …) of a server error.
    public let sqlState: String?
    /// The server's primary message, or libpq's for connection failures.
    public let message: String
    /// The constraint a server error names (unique, foreign-key and check violations).
    public let constraint: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, constraint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
    }

    public var description: String {
        var text = "PostgreSQL"
        switch kind {
        case .connect: text += " connect failed"
        case .connectionLost: text += " connection lost"
        case .server: text += " error"
        case .pipelineAborted: text += " pipeline aborted"
        case .client: text += " client error"
        }
        if let sqlState { text += " \(sqlState)" }
        if !message.isEmpty { text += ": \(message)" }
        if let constraint { text += " (constraint \(constraint))" }
        return text
    }

    /// A unique or primary-key violation (SQLSTATE 23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// True when the connection is gone: open a new one.
    public var isConnectionFailure: Bool { kind == .connect || kind == .connectionLost }

    /// A write refused by a server that takes none (25006 `read_only_sql_transaction`): the
    /// session is on a standby, or on a primary demoted since; a new connection finds the one
    /// that takes writes (`target_session_attrs=read-write`).
    public var isReadOnlySession: Bool { sqlState == "25006" }

    /// A serialization failure or deadlock (class 40): the transaction may be retried.
    public var isRetryableTransactionFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
}
