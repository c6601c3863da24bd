/// Why a Redis call failed. No case carries a password or a command's arguments, so every
/// `description` is safe to log.
public enum RedisError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The URL is not `redis://[[user]:password@]host[:port][/db]` (or `redis-sentinel://…`). The reason never quotes the
    /// URL, which may hold a password.
    case invalidURL(String)
    /// No connection could be made: the endpoint (`host:port`) and the system's reason
    /// (refused, name not resolved, connect timeout, …).
    case connectFailed(String)
    /// The server refused the URL's credentials: its error reply (Redis never quotes the
    /// password in it).
    case authenticationFailed(String)
    /// The connection broke while a command was sent or its reply read (closed by the server,
    /// reset, another I/O error). Whether the commands in flight ran is unknown. The connection
    /// is closed; `RedisConnection.reconnect()` opens a new one.
    case connectionLost(String)
    /// No reply within the command timeout. The connection is closed (a late reply would
    /// otherwise be read as the answer to the next command); whether the command ran is unknown.
    case timeout
    /// The server answered with an error reply: its text (`ERR …`, `WRONGTYPE …`, a script's
    /// own error). Redis quotes the arguments of an unknown command in it, so commands whose
    /// arguments could carry personal data must not be misspelt.
    case server(String)
    /// A reply that could not be parsed, or that did not have the shape the command answers.
    case protocolError(String)
    /// The connection was closed by an earlier failure or by `close()` and not reopened.
    case notConnected
    /// The sentinels that answered monitor no master of this name (`redis-sentinel://…/NAME`).
    case unknownMaster(String)
    /// No sentinel answered: each one's endpoint and reason.
    case noSentinel(String)
    /// The server (its endpoint) is not a master: a replica, or a master demoted by a failover.
    case notMaster(String)

    public var description: String {
        switch self {
        case .invalidURL(let reason): "invalid Redis URL: \(reason)"
        case .connectFailed(let reason): "cannot connect to Redis at \(reason)"
        case .authenticationFailed(let reply): "Redis refused the URL's credentials: \(reply)"
        case .connectionLost(let reason): "connection to Redis lost: \(reason)"
        case .timeout: "no reply from Redis within the command timeout"
        case .server(let reply): "Redis error reply: \(reply)"
        case .protocolError(let reason): "unexpected reply from Redis: \(reason)"
        case .notConnected: "not connected to Redis (reconnect first)"
        case .unknownMaster(let name): "the sentinels know no master named \(name)"
        case .noSentinel(let reasons): "no Redis Sentinel answered (\(reasons))"
        case .notMaster(let endpoint): "Redis at \(endpoint) is not the master (a failover is under way or over)"
        }
    }
}
