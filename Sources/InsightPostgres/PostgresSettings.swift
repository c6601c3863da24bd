import PostgresClient

/// How the PostgreSQL store reaches its server, and how long it waits for it.
public struct PostgresSettings: Sendable {
    /// A libpq connection URI (`postgres://user:password@host:port/db?sslmode=…`). Its
    /// password never appears in an error or a log line.
    public var url: String
    /// Most seconds a connection attempt may take (libpq's `connect_timeout`, at least 2).
    public var connectTimeoutSeconds = 3
    /// Most milliseconds one statement may run (`statement_timeout`); a batch of the writer
    /// that runs longer fails and its jobs answer unavailable.
    public var statementTimeoutMilliseconds = 10_000
    /// Most milliseconds a statement waits for a lock (`lock_timeout`): another instance's
    /// batch holding the row or advisory lock a job needs.
    public var lockTimeoutMilliseconds = 5_000
    /// TCP keepalives and `tcp_user_timeout`: a server that vanished (a dead host, a cut
    /// network) is noticed within about `deadServerSeconds`, idle or not.
    public var deadServerSeconds = 10
    /// Seconds between attempts to reconnect after a failure; operations in between fail at once.
    public var reconnectDelaySeconds = 0.5
    /// When the writer's connection is lost (the server crashed, or is failing over to its
    /// standby), the longest it tries to reach a server that takes writes before answering the
    /// batch unavailable; a batch that was in flight learns then whether it committed. The jobs
    /// queued behind it wait meanwhile; later batches, until a connection is made again, fail at once.
    public var failoverWaitSeconds = 2.0
    /// Connections for reads (credentials on each request, admin, the periodic jobs' reads).
    public var readConnections = 4
    /// Most writes waiting for the writer before new ones are refused (`StoreFailure.overloaded`).
    public var writeQueueCapacity = 10_000
    /// Most writes committed together in one pipelined round trip.
    public var commitBatch = 256
    /// The name the server shows for the sessions (`application_name`).
    public var applicationName = "insightd"

    public init(url: String) { self.url = url }

    /// libpq keywords every connection gets; the URL may set its own. Every connection wants the
    /// server that takes writes (`target_session_attrs=read-write`): with a multi-host URL
    /// (`postgres://h1:5432,h2:5432/db`) libpq tries the hosts in turn and keeps the first that
    /// does, so after a failover each new connection finds the promoted standby.
    var connectionDefaults: [(keyword: String, value: String)] {
        let idle = max(1, deadServerSeconds / 2)
        let interval = max(1, deadServerSeconds / 6)
        return [
            ("keepalives", "1"),
            ("keepalives_idle", String(idle)),
            ("keepalives_interval", String(interval)),
            ("keepalives_count", "3"),
            ("tcp_user_timeout", String(deadServerSeconds * 1_000)),
            ("application_name", applicationName),
            ("target_session_attrs", "read-write")
        ]
    }

    /// A new connection with the session settings the store relies on: every commit durable
    /// before it is acknowledged (`synchronous_commit`, whatever the server's default), and the
    /// timeouts above.
    func connect() throws -> PostgresConnection {
        let connection = try PostgresConnection(
            url: url, connectTimeout: connectTimeoutSeconds,
            defaults: connectionDefaults)
        try connection.execute(
            """
            SET synchronous_commit = on;
            SET statement_timeout = \(statementTimeoutMilliseconds);
            SET lock_timeout = \(lockTimeoutMilliseconds);
            SET idle_in_transaction_session_timeout = \(max(statementTimeoutMilliseconds, 1_000) * 3);
            SET TIME ZONE 'UTC'
            """)
        return connection
    }
}
