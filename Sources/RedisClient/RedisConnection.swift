internal import CHiredis
import Glibc

/// Ignoring SIGPIPE for the process, once, before the first connection: hiredis writes with
/// `write(2)`, and a write to a connection the server has closed would otherwise kill the
/// process instead of failing with EPIPE. The daemon and HTTPServer set the same.
private let ignoreSIGPIPE: Void = {
    signal(SIGPIPE, SIG_IGN)
}()

/// One blocking connection to a Redis server (hiredis, RESP2, no TLS). Owns its
/// `redisContext*` and frees it in `deinit` or when the connection fails.
///
/// **Threads.** A connection is used by one thread at a time: each call writes and then reads
/// on the socket, and two threads interleaving would read each other's replies. It is not
/// `Sendable`; an owner that shares one between threads serialises calls itself (e.g. a
/// `Mutex` holding it), or gives each thread its own connection.
///
/// **Round trips.** `command` is one round trip; `pipeline` sends every command of a batch and
/// then reads the replies, so a batch is one round trip too. Each call blocks at most
/// `commandTimeout` waiting on the socket.
///
/// **Failures.** A transport failure (`connectionLost`, `timeout`) closes the connection: a
/// reply left half-read would otherwise be taken for the next command's. Later calls throw
/// `notConnected` until `reconnect()` succeeds. The connection never reconnects by itself; the
/// caller decides when (at once, on a timer, after a back-off) and what to rebuild then.
public final class RedisConnection {
    public let url: RedisURL
    /// How long opening the TCP connection may take.
    public let connectTimeout: Duration
    /// How long one call may wait on the socket (for a write, or for the next reply).
    public let commandTimeout: Duration
    private var context: UnsafeMutablePointer<redisContext>?

    /// Connects to `url`, then sends AUTH and SELECT when the URL has a password or a database.
    public init(url: RedisURL, connectTimeout: Duration = .seconds(1), commandTimeout: Duration = .seconds(1))
        throws(RedisError)
    {
        precondition(connectTimeout > .zero && commandTimeout > .zero, "Redis timeouts are positive")
        self.url = url
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        _ = ignoreSIGPIPE
        try open()
    }

    /// Parses `url` (`redis://[[user]:password@]host[:port][/db]`) and connects.
    public convenience init(
        url: String, connectTimeout: Duration = .seconds(1),
        commandTimeout: Duration = .seconds(1)
    ) throws(RedisError) {
        try self.init(url: RedisURL(url), connectTimeout: connectTimeout, commandTimeout: commandTimeout)
    }

    deinit { close() }

    /// True until a transport failure or `close()`; a server that went away is only noticed by
    /// the next call.
    public var isConnected: Bool { context != nil }

    /// Closes the connection, if open, and opens a new one with the same URL and timeouts (AUTH
    /// and SELECT again). The server's state for the old connection (a MULTI, a subscription)
    /// is gone; scripts are found again by `run`'s NOSCRIPT fallback.
    public func reconnect() throws(RedisError) {
        try open()
    }

    /// Closes the connection. Later calls throw `notConnected` until `reconnect()`.
    public func close() {
        if let context { redisFree(context) }
        context = nil
    }

    /// Sends one command and reads its reply. An error reply throws `RedisError.server`.
    public func command(_ arguments: RedisArgument...) throws(RedisError) -> RedisReply {
        try command(RedisCommand(arguments))
    }

    /// Sends one command (a script command with its NOSCRIPT fallback) and reads its reply. An
    /// error reply throws `RedisError.server`.
    public func command(_ command: RedisCommand) throws(RedisError) -> RedisReply {
        let reply = try pipeline([command])[0]
        if case .error(let text) = reply { throw .server(text) }
        return reply
    }

    /// Runs `script` atomically on the server (EVALSHA; EVAL when the server answers NOSCRIPT).
    /// An error reply, the script's own `error_reply` included, throws `RedisError.server`.
    public func run(_ script: RedisScript, keys: [RedisArgument] = [], arguments: [RedisArgument] = [])
        throws(RedisError) -> RedisReply
    {
        try command(.script(script, keys: keys, arguments: arguments))
    }

    /// Sends every command, then reads their replies: one round trip for the batch (plus one
    /// for the script commands the server answered NOSCRIPT, sent again as EVAL). Replies come
    /// in the order of `commands`; an error reply is an `.error` in its place, not a throw, so
    /// the other replies are not lost. The batch is not atomic: the server may run other
    /// clients' commands between these. When a transport failure throws, which of the commands
    /// ran is unknown.
    public func pipeline(_ commands: [RedisCommand]) throws(RedisError) -> [RedisReply] {
        guard !commands.isEmpty else { return [] }
        guard let context else { throw .notConnected }
        for command in commands { try append(context, command.arguments) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands { replies.append(try readReply(context)) }

        let forgotten = commands.indices.filter { index in
            guard commands[index].script != nil, case .error(let text) = replies[index] else { return false }
            return text.hasPrefix("NOSCRIPT")
        }
        if !forgotten.isEmpty {
            for index in forgotten { try append(context, commands[index].evalFallback!) }
            for index in forgotten { replies[index] = try readReply(context) }
        }
        return replies
    }

    /// The server's clock (`TIME`), in microseconds since the Unix epoch: one clock for every
    /// instance, whatever their own clocks say. A script that needs the time reads it itself
    /// (`redis.call('TIME')`), which saves the round trip.
    public func serverTime() throws(RedisError) -> Int64 {
        let reply = try command("TIME")
        guard let parts = reply.elements, parts.count == 2,
            let seconds = parts[0].string.flatMap({ Int64($0) }),
            let microseconds = parts[1].string.flatMap({ Int64($0) })
        else {
            throw .protocolError("TIME did not answer [seconds, microseconds]")
        }
        return seconds * 1_000_000 + microseconds
    }

    // MARK: - hiredis

    private var endpoint: String { RedisURL.endpoint(host: url.host, port: url.port) }

    private func open() throws(RedisError) {
        close()
        guard let opened = redisConnectWithTimeout(url.host, Int32(url.port), Self.timeval(connectTimeout)) else {
            throw .connectFailed("\(endpoint): out of memory")
        }
        guard opened.pointee.err == 0 else {
            let reason = String(cString: insightd_redis_errstr(opened))
            redisFree(opened)
            throw .connectFailed("\(endpoint): \(reason)")
        }
        guard redisSetTimeout(opened, Self.timeval(commandTimeout)) == REDIS_OK else {
            let reason = String(cString: insightd_redis_errstr(opened))
            redisFree(opened)
            throw .connectFailed("\(endpoint): cannot set the command timeout: \(reason)")
        }
        // Keep-alive probes notice a peer that vanished while the connection sat idle.
        _ = redisEnableKeepAlive(opened)
        context = opened
        do throws(RedisError) {
            if let password = url.password {
                var auth: [RedisArgument] = ["AUTH"]
                if let username = url.username { auth.append(RedisArgument(username)) }
                auth.append(RedisArgument(password))
                if case .error(let text) = try pipeline([RedisCommand(auth)])[0] {
                    throw RedisError.authenticationFailed(text)
                }
            }
            if url.database != 0 {
                _ = try command("SELECT", RedisArgument(url.database))
            }
        } catch {
            close()
            throw error
        }
    }

    /// Formats one command into hiredis's output buffer (nothing is written yet). The
    /// arguments go with their lengths, so any byte, NUL included, is sent as it is.
    private func append(_ context: UnsafeMutablePointer<redisContext>, _ arguments: [RedisArgument])
        throws(RedisError)
    {
        var lengths: [Int] = []
        lengths.reserveCapacity(arguments.count)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(arguments.reduce(1) { $0 + $1.bytes.count })
        for argument in arguments {
            lengths.append(argument.bytes.count)
            bytes.append(contentsOf: argument.bytes)
        }
        bytes.append(0)  // a base address even when every argument is empty
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                var pointers: [UnsafePointer<CChar>?] = []
                pointers.reserveCapacity(lengths.count)
                var offset = 0
                for length in lengths {
                    pointers.append(chars.baseAddress! + offset)
                    offset += length
                }
                return redisAppendCommandArgv(context, Int32(lengths.count), &pointers, lengths)
            }
        }
        guard status == REDIS_OK else { throw failure(context, errno: errno) }
    }

    /// Writes what is buffered, if anything, then reads the next reply.
    private func readReply(_ context: UnsafeMutablePointer<redisContext>) throws(RedisError) -> RedisReply {
        var raw: UnsafeMutableRawPointer?
        let status = redisGetReply(context, &raw)
        let failedErrno = errno
        guard status == REDIS_OK, let raw else { throw failure(context, errno: failedErrno) }
        defer { freeReplyObject(raw) }
        do {
            return try Self.decode(raw.assumingMemoryBound(to: redisReply.self))
        } catch {
            close()
            throw error
        }
    }

    /// The error for a failed hiredis call; closes the connection, which hiredis no longer uses
    /// once an error is set on it.
    private func failure(_ context: UnsafeMutablePointer<redisContext>, errno failedErrno: Int32) -> RedisError {
        let kind = context.pointee.err
        let reason = String(cString: insightd_redis_errstr(context))
        close()
        // SO_RCVTIMEO/SO_SNDTIMEO (redisSetTimeout) expiring: the read or write fails with EAGAIN.
        if kind == REDIS_ERR_IO && (failedErrno == EAGAIN || failedErrno == EWOULDBLOCK) { return .timeout }
        if kind == REDIS_ERR_PROTOCOL { return .protocolError(reason) }
        return .connectionLost(reason)
    }

    private static func decode(_ reply: UnsafePointer<redisReply>) throws(RedisError) -> RedisReply {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STATUS: return .status(text(r))
        case REDIS_REPLY_ERROR: return .error(text(r))
        case REDIS_REPLY_INTEGER: return .integer(Int64(r.integer))
        case REDIS_REPLY_STRING: return .bulk(Array(UnsafeRawBufferPointer(start: r.str, count: r.len)))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(r.elements)
            for index in 0..<r.elements {
                guard let element = r.element[index] else { throw .protocolError("an array element is missing") }
                elements.append(try decode(element))
            }
            return .array(elements)
        default:
            throw .protocolError("reply type \(r.type)")
        }
    }

    private static func text(_ reply: redisReply) -> String {
        String(decoding: UnsafeRawBufferPointer(start: reply.str, count: reply.len), as: UTF8.self)
    }

    private static func timeval(_ duration: Duration) -> Glibc.timeval {
        let (seconds, attoseconds) = duration.components
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}

/// A connection is used by one thread at a time (see `RedisConnection`).
@available(*, unavailable)
extension RedisConnection: Sendable {}
