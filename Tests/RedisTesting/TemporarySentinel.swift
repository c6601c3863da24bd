import Foundation
import Glibc
import Locking
import RedisClient

/// A private Redis Sentinel for tests: an ordinary `redis-sentinel` process on a free loopback
/// port, watching the master on `masterPort` under `masterName`, its configuration (which it
/// rewrites as it learns replicas and failovers) and log in a temporary directory. The master is
/// judged down after `downAfterMilliseconds` without an answer, and failed over when `quorum`
/// sentinels agree. `deinit` kills it and removes the directory.
public final class TemporarySentinel: Sendable {
    public let port: Int
    public let directory: String
    public let masterName: String
    /// The sentinel's own `requirepass`, when given.
    private let password: String?
    private let process = Locked<Process?>(nil)

    /// `masterPassword` is the master's (`sentinel auth-pass`); `password` the sentinel's own.
    public init(
        monitoring masterPort: Int, masterName: String = "insightd", quorum: Int = 1,
        downAfterMilliseconds: Int = 500, masterPassword: String? = nil, password: String? = nil
    ) throws {
        self.masterName = masterName
        self.password = password
        let directory = try TemporaryRedis.makeDirectory()
        self.directory = directory
        let process = self.process
        port = try TemporaryRedis.launchOnFreePort(directory: directory) { port in
            var lines = [
                "port \(port)", "bind 127.0.0.1", "daemonize no", "dir \(directory)", "logfile sentinel.log",
                "sentinel monitor \(masterName) 127.0.0.1 \(masterPort) \(quorum)",
                "sentinel down-after-milliseconds \(masterName) \(downAfterMilliseconds)",
                "sentinel failover-timeout \(masterName) 10000",
                "sentinel parallel-syncs \(masterName) 1"
            ]
            if let masterPassword { lines.append("sentinel auth-pass \(masterName) \(masterPassword)") }
            if let password { lines.append("requirepass \(password)") }
            let configuration = directory + "/sentinel.conf"
            try (lines.joined(separator: "\n") + "\n").write(toFile: configuration, atomically: false, encoding: .utf8)
            try Self.launch(port: port, configuration: configuration, password: password, directory: directory, into: process)
        }
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    public var address: RedisAddress { RedisAddress(host: "127.0.0.1", port: port) }

    /// A new connection to this sentinel.
    public func connect() throws -> RedisConnection {
        try RedisConnection(
            url: RedisURL(host: "127.0.0.1", port: port, password: password),
            connectTimeout: .seconds(2), commandTimeout: .seconds(2))
    }

    /// The master's port as this sentinel names it now.
    public func masterPort() throws -> Int? {
        let reply = try connect().command("SENTINEL", "get-master-addr-by-name", RedisArgument(masterName))
        return try RedisSentinelURL.masterAddress(in: reply)?.port
    }

    /// Waits until this sentinel knows `count` replicas of the master (it learns them from the
    /// master's INFO, every 10 s at first): a failover needs one. False after `seconds`.
    public func waitForReplicas(_ count: Int, seconds: Double = 15) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let reply = try? connect().command("SENTINEL", "replicas", RedisArgument(masterName)),
                (reply.elements?.count ?? 0) >= count
            {
                return true
            }
            usleep(100_000)
        }
        return false
    }

    /// Kills the sentinel (SIGKILL) and waits for it to exit.
    public func kill() {
        guard
            let running = process.withLock({ value -> Process? in
                defer { value = nil }
                return value
            })
        else { return }
        if running.isRunning { Glibc.kill(running.processIdentifier, SIGKILL) }
        running.waitUntilExit()
    }

    private static func launch(
        port: Int, configuration: String, password: String?, directory: String,
        into slot: Locked<Process?>
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try TemporaryRedis.executable("redis-sentinel"))
        process.arguments = [configuration]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        slot.withLock { $0 = process }
        let url = RedisURL(host: "127.0.0.1", port: port, password: password)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, process.isRunning {
            if let connection = try? RedisConnection(
                url: url, connectTimeout: .milliseconds(200),
                commandTimeout: .milliseconds(500)),
                (try? connection.command("PING")) == .status("PONG")
            {
                return
            }
            usleep(10_000)
        }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        slot.withLock { $0 = nil }
        let log = (try? String(contentsOfFile: directory + "/sentinel.log", encoding: .utf8)) ?? ""
        throw TemporaryRedisError(
            message: "redis-sentinel on port \(port) did not answer PING; its log ends:\n"
                + log.split(separator: "\n").suffix(5).joined(separator: "\n"))
    }
}
