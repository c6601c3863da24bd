import Dispatch
import Foundation
import Locking
import RedisClient
import Synchronization
import Telemetry

/// How an instance reaches the shared Redis.
public struct RedisLinkSettings: Sendable {
    /// One server, or the master a set of sentinels watches (followed through their failovers).
    public var endpoint: RedisEndpoint
    /// The longest a request-path call waits on Redis (also the connect timeout of the
    /// request-path connections): tens of milliseconds, so that a Redis that hangs holds the
    /// evaluations waiting on it for no longer.
    public var commandTimeout: Duration = .milliseconds(50)
    /// How often the background thread checks Redis (reconnects while it is down).
    public var checkInterval: Duration = .seconds(1)
    /// The timeouts of the background thread's own connection (its rebuilds send large batches).
    public var backgroundTimeout: Duration = .seconds(5)
    /// Prefixed to every key, so that several deployments can share one Redis database.
    public var keyPrefix = "insightd:"
    /// Request-path connections kept open when idle (more are opened under a burst of
    /// concurrency and closed when returned to a full pool).
    public var maxIdleConnections = 64

    public init(endpoint: RedisEndpoint) { self.endpoint = endpoint }

    /// One server at `url`.
    public init(url: RedisURL) { self.init(endpoint: .server(url)) }
}

/// What the link reports, for the daemon's log. No case carries a key or a password.
public enum RedisLinkEvent: Sendable, Equatable {
    /// Redis became unreachable (or was not reachable at start): the shared state is not
    /// consulted until it is back. `reason` is a `RedisError` description.
    case unavailable(reason: String)
    /// Redis is reachable again (or for the first time).
    case available
    /// A background task of a user of the link (the velocity rebuild) says what it did.
    case note(String, [(String, String)])
    /// A background task failed; `reason` is a `RedisError` description.
    case failed(String, reason: String)
    /// The sentinels name another master than the one in use (a failover): its address, and the
    /// one it replaces.
    case masterChanged(to: String, from: String)

    public static func == (a: RedisLinkEvent, b: RedisLinkEvent) -> Bool {
        switch (a, b) {
        case (.unavailable(let x), .unavailable(let y)): x == y
        case (.available, .available): true
        case (.note(let x, let f), .note(let y, let g)): x == y && f.map { "\($0)=\($1)" } == g.map { "\($0)=\($1)" }
        case (.failed(let x, let r), .failed(let y, let s)): x == y && r == s
        case (.masterChanged(let x, let f), .masterChanged(let y, let g)): x == y && f == g
        default: false
        }
    }
}

/// The connections of one instance to the shared Redis, and whether Redis is up.
///
/// **Request path.** An evaluation's calls are queued (`enqueue`) for a thread that sends them in
/// pipelines, so no event loop waits for Redis. `perform` runs a call on a connection taken from
/// a pool (opened on demand), so its callers never wait on each other; each wait for a reply
/// lasts at most `commandTimeout`. A transport failure (connection lost, timeout) marks Redis unavailable at
/// once: no retry on the request path, and until the background thread has reconnected every
/// `perform` answers nil at once, which its users take as "use the local fallback".
///
/// **Background thread** (`start`/`stop`). Every `checkInterval` it PINGs Redis on a connection
/// of its own and runs the users' checks (`onCheck`: the velocity marker); a failure marks Redis
/// unavailable. While Redis is down it reconnects; once Redis answers it marks Redis available
/// and runs the checks with the time the outage began (what they rebuild arrives while requests
/// flow; everything written is idempotent).
///
/// **Sentinel** (`RedisEndpoint.sentinels`). The background thread asks the sentinels where the
/// master is at every check, and checks with `ROLE` that the server it connects to is a master.
/// When they name another server (a failover), the link drops the old master's connections, uses
/// the new one and runs the checks as after an outage (what the promoted replica had not received
/// is replayed). A request-path call that fails, or that a demoted master refuses (`READONLY`),
/// marks Redis unavailable until the next check finds the master; while the master they name
/// does not answer, Redis stays unavailable and the users fall back. While no sentinel answers,
/// the master in use stays in use as long as it answers as one.
///
/// **Reporting.** Going down and coming back are reported once each (`log`); the gauge
/// `insightd_redis_up` is 1 while Redis is used, and `insightd_redis_failures_total{kind}`
/// counts failed calls (`connection`, `timeout`, `reply`).
public final class RedisLink: Sendable {
    public let settings: RedisLinkSettings
    private let available = Atomic<Bool>(false)
    /// The server in use: the URL's, or the master the sentinels named last (nil until they have).
    private let master: Locked<RedisURL?>
    /// The sentinel that answered last, asked first at the next check.
    private let answeringSentinel = Locked<Int>(0)
    /// Bumped when Redis goes down: connections of an older generation are not pooled again.
    private let generation = Atomic<UInt64>(0)
    private let idle = Locked<[PooledConnection]>([])
    /// When Redis was last seen going down (milliseconds of the wall clock), for rebuilds.
    private let downSince = Locked<Int64?>(nil)
    private let checks = Locked<[@Sendable (RedisConnection, _ recoveredSince: Int64?) throws(RedisError) -> Void]>([])
    private let log: @Sendable (RedisLinkEvent) -> Void
    private let failures: CounterFamily
    private let worker = Locked<Worker?>(nil)
    /// The thread that pipelines the request path's queued calls (`enqueue`), made by the first;
    /// taken out by `stop`, after which calls are no longer queued.
    private let calls = Locked<(queue: RedisCallQueue?, stopped: Bool)>((nil, false))

    /// `log` receives going down and coming back (once each), and what background tasks report.
    public init(
        settings: RedisLinkSettings, metrics: MetricsRegistry,
        log: @escaping @Sendable (RedisLinkEvent) -> Void
    ) {
        self.settings = settings
        self.log = log
        if case .server(let url) = settings.endpoint { master = Locked(url) } else { master = Locked(nil) }
        failures = metrics.counter(
            "insightd_redis_failures_total",
            help: "Redis calls that failed, by kind (connection, timeout, reply).",
            labels: ["kind"])
        // Read from the flag when scraped: a gauge set at each change could be left at 0 by a
        // request thread's going-down racing the check thread's coming-back.
        metrics.collect(
            "insightd_redis_up",
            help: "1 while the shared Redis is reachable and used; 0 while instances fall back to local shares.",
            type: .gauge
        ) { [weak self] in [(labels: [], value: self?.isAvailable == true ? 1 : 0)] }
    }

    deinit { stop() }

    /// True while Redis is used; false while the users fall back.
    public var isAvailable: Bool { available.load(ordering: .acquiring) }

    /// Registers a check the background thread runs on its own connection: every interval while
    /// Redis is up (`recoveredSince` nil), and once right after a (re)connection, as Redis is used
    /// again (`recoveredSince`: when it went down, wall-clock milliseconds; 0 at the first
    /// connection). A thrown transport error marks Redis unavailable.
    public func onCheck(_ check: @escaping @Sendable (RedisConnection, _ recoveredSince: Int64?) throws(RedisError) -> Void) {
        checks.withLock { $0.append(check) }
    }

    /// Connects once now (so that an instance starting beside a live Redis uses it from its
    /// first request; at most `backgroundTimeout` when Redis does not answer) and starts the
    /// background thread, which runs the checks at once (a rebuild runs there, never here).
    /// Calling it again does nothing; `stop` ends the thread.
    public func start() {
        let created = worker.withLock { current -> Worker? in
            guard current == nil else { return nil }
            let made = Worker()
            current = made
            return made
        }
        guard let created else { return }
        downSince.withLock { $0 = 0 }
        var first: RedisConnection?
        tick(&first, runChecks: false)
        let link = self
        let thread = Thread {
            var connection: RedisConnection? = nil
            repeat {
                link.tick(&connection, runChecks: true)
            } while !created.stopping.load(ordering: .acquiring)
                && created.wake.wait(timeout: .now() + link.settings.checkInterval.seconds) == .timedOut
        }
        thread.name = "insightd.redis"
        thread.start()
    }

    /// Answers the queued calls, stops the background thread (within one check) and closes every
    /// pooled connection.
    public func stop() {
        calls.withLock { calls -> RedisCallQueue? in
            defer { calls = (nil, true) }
            return calls.queue
        }?.stop()
        guard
            let current = worker.withLock({ value -> Worker? in
                defer { value = nil }
                return value
            })
        else { return }
        current.stopping.store(true, ordering: .releasing)
        current.wake.signal()
        idle.withLock { $0.removeAll() }
    }

    // MARK: The request path

    /// Queues a call for the thread that pipelines the request path's calls (`RedisCallQueue`),
    /// so that the calling thread does not wait for Redis: `answered` runs on that thread with
    /// the reply, or nil when Redis did not answer. False when it is not queued (the link was
    /// stopped, or too many calls wait): make the call with `perform` instead.
    public func enqueue(_ command: RedisCommand, answered: @escaping @Sendable (RedisReply?) -> Void) -> Bool {
        let queue = calls.withLock { calls -> RedisCallQueue? in
            if calls.stopped { return nil }
            if let queue = calls.queue { return queue }
            let made = RedisCallQueue { [weak self] commands in
                guard let self else { return nil }
                let replies = perform { connection throws(RedisError) in try connection.pipeline(commands) }
                // An error reply is counted as `perform` counts one that a single call throws.
                for case .error(let text) in replies ?? [] { fail(.server(text)) }
                return replies
            }
            calls.queue = made
            return made
        }
        return queue?.submit(command, answered: answered) ?? false
    }

    /// Runs `body` on one of this instance's connections; nil when Redis is unavailable or the
    /// call failed (a transport failure also marks Redis unavailable).
    public func perform<R>(_ body: (RedisConnection) throws(RedisError) -> R) -> R? {
        guard isAvailable else { return nil }
        let current = generation.load(ordering: .acquiring)
        var pooled = idle.withLock { $0.popLast() }
        if pooled == nil {
            guard let url = master.withLock({ $0 }) else { return nil }
            do {
                pooled = PooledConnection(
                    try RedisConnection(
                        url: url, connectTimeout: settings.commandTimeout,
                        commandTimeout: settings.commandTimeout),
                    generation: current)
            } catch {
                fail(error)
                return nil
            }
        }
        let taken = pooled!
        do {
            let result = try body(taken.connection)
            release(taken)
            return result
        } catch {
            fail(error)
            if case .server = error { release(taken) }
            return nil
        }
    }

    private func release(_ pooled: PooledConnection) {
        guard pooled.connection.isConnected, pooled.generation == generation.load(ordering: .acquiring) else { return }
        idle.withLock { if $0.count < settings.maxIdleConnections { $0.append(pooled) } }
    }

    /// Counts a failed call; a transport failure marks Redis unavailable, and so does a master
    /// demoted by a failover, which refuses writes (`READONLY`) until the next check finds the new one.
    private func fail(_ error: RedisError) {
        switch error {
        case .server(let text) where text.hasPrefix("READONLY"):
            failures.increment("reply")
            markUnavailable(error)
        case .server, .protocolError:
            failures.increment("reply")
        case .timeout:
            failures.increment("timeout")
            markUnavailable(error)
        default:
            failures.increment("connection")
            markUnavailable(error)
        }
    }

    private func markUnavailable(_ error: RedisError) {
        guard available.exchange(false, ordering: .acquiringAndReleasing) else { return }
        generation.add(1, ordering: .releasing)
        idle.withLock { $0.removeAll() }
        // An outage whose rebuild had not finished keeps its start (0: never connected).
        downSince.withLock { if $0 == nil { $0 = Int64(Date().timeIntervalSince1970 * 1000) } }
        log(.unavailable(reason: "\(error)"))
    }

    // MARK: The background thread

    /// One check: find the master (with sentinels), reconnect while down, run the users' checks
    /// (unless `runChecks` is false: the first connection, made by `start`), report changes.
    private func tick(_ connection: inout RedisConnection?, runChecks: Bool) {
        do throws(RedisError) {
            if case .sentinels(let sentinels) = settings.endpoint {
                try followMaster(sentinels, &connection)
            }
            if connection == nil || !connection!.isConnected {
                connection = nil
                guard let url = master.withLock({ $0 }) else { throw RedisError.notConnected }
                connection = try RedisConnection(
                    url: url, connectTimeout: settings.backgroundTimeout,
                    commandTimeout: settings.backgroundTimeout)
            }
            let open = connection!
            var since: Int64?
            // A Redis that went away is noticed here too when no request reaches it; with sentinels,
            // a master demoted since they named it too.
            if case .sentinels = settings.endpoint {
                try open.requireMaster()
            } else {
                _ = try open.command("PING")
            }
            if !isAvailable {
                // Used again at once; what the checks rebuild arrives while requests flow, and
                // what those requests write meanwhile is written twice at worst (idempotent).
                since = downSince.withLock { $0 ?? 0 }
                if !available.exchange(true, ordering: .acquiringAndReleasing) {
                    log(.available)
                }
            }
            guard runChecks else {
                downSince.withLock { $0 = nil }
                return
            }
            for check in checks.withLock({ $0 }) { try check(open, since) }
            // The outage is over once the checks have rebuilt what it lost.
            if since != nil { downSince.withLock { $0 = nil } }
        } catch {
            connection = nil
            if isAvailable {
                fail(error)
            } else if downSince.withLock({ $0 ?? 0 }) == 0 {
                // Not reachable at start: said once, like any going down.
                downSince.withLock { $0 = Int64(Date().timeIntervalSince1970 * 1000) }
                failures.increment(error == .timeout ? "timeout" : "connection")
                log(.unavailable(reason: "\(error)"))
            }
        }
    }

    /// Asks the sentinels where the master is; when they name another server than the one in use
    /// (a failover), switches to it: the old master's connections are dropped (the background one,
    /// and the pooled ones by marking Redis unavailable, so that the checks run as after an outage).
    /// When no sentinel answers, the master in use stays as long as it answers as a master (the
    /// `ROLE` check that follows): sentinels out of reach are no reason to give up Redis.
    private func followMaster(_ sentinels: RedisSentinelURL, _ connection: inout RedisConnection?) throws(RedisError) {
        let located: RedisURL
        do {
            let index: Int
            (located, index) = try sentinels.locateMaster(
                first: answeringSentinel.withLock { $0 },
                connectTimeout: settings.backgroundTimeout,
                commandTimeout: settings.backgroundTimeout)
            answeringSentinel.withLock { $0 = index }
        } catch {
            if master.withLock({ $0 }) != nil { return }
            throw error
        }
        let previous = master.withLock { current -> RedisURL? in
            defer { current = located }
            return current
        }
        guard let previous, previous != located else { return }
        connection = nil
        log(
            .masterChanged(
                to: "\(RedisAddress(host: located.host, port: located.port))",
                from: "\(RedisAddress(host: previous.host, port: previous.port))"))
        markUnavailable(RedisError.notMaster("\(RedisAddress(host: previous.host, port: previous.port))"))
    }

    /// Reports what a background task of a user did.
    func report(_ event: RedisLinkEvent) { log(event) }

    /// A key under this deployment's prefix.
    func key(_ suffix: String) -> RedisArgument { RedisArgument(settings.keyPrefix + suffix) }
}

/// A request-path connection, used by one thread at a time: taken out of the pool before a call
/// and put back after it, so no two threads ever hold it together.
private final class PooledConnection: @unchecked Sendable {
    // @unchecked: the pool hands the connection to one thread at a time (see above).
    let connection: RedisConnection
    let generation: UInt64

    init(_ connection: RedisConnection, generation: UInt64) {
        self.connection = connection
        self.generation = generation
    }
}

/// The background thread's stop signal.
private final class Worker: Sendable {
    let stopping = Atomic<Bool>(false)
    let wake = DispatchSemaphore(value: 0)
}

extension Duration {
    /// The duration in seconds, as `DispatchTime` arithmetic takes it.
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
