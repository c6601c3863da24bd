import Foundation
import Glibc
import Locking
import LoopbackPort
import RedisClient

/// A private redis-server for tests: an ordinary process on a free loopback port, without
/// persistence (`--save ''`, `--appendonly no`), its files in a temporary directory. It can be
/// stopped and started again on the same port (Redis going away under load and coming back);
/// `deinit` stops it and removes the directory.
///
/// Most tests share one server (`TemporaryRedis.shared()`, started on first use and stopped
/// when the test process exits) and use keys of their own; a test that stops the server or
/// changes its configuration starts its own.
public final class TemporaryRedis: Sendable {
    public let port: Int
    /// The server's working directory (its log is `redis.log` there).
    public let directory: String
    private let password: String?
    /// The master's port when the server is a replica (`replicaof`).
    private let replicaOf: Int?
    private let process = Locked<Process?>(nil)

    /// Starts a server (with `requirepass` when `password` is given); with `replicaOf`, a replica
    /// of the master on that loopback port (`masterauth` the same password), which returns once it
    /// answers PING, not once it has synchronised.
    public init(password: String? = nil, replicaOf: Int? = nil) throws {
        self.password = password
        self.replicaOf = replicaOf
        let directory = try Self.makeDirectory()
        self.directory = directory
        let process = self.process
        port = try Self.launchOnFreePort(directory: directory) { port in
            try Self.launch(port: port, directory: directory, password: password, replicaOf: replicaOf, into: process)
        }
    }

    /// Runs `launch` with a free loopback port and returns that port. The port is found by binding
    /// port 0 and closing, and another process may take it before the server binds it, so a launch
    /// that fails is tried again on a new port (three tries); after the last, `directory` is
    /// removed and the error thrown.
    static func launchOnFreePort(directory: String, _ launch: (Int) throws -> Void) throws -> Int {
        var lastError: Error?
        for _ in 0..<3 {
            let port = try freePort()
            do {
                try launch(port)
                return port
            } catch {
                lastError = error
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw lastError!
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `redis://[:password@]127.0.0.1:<port>`, the password percent-encoded.
    public var url: String {
        let credentials = password.map { ":\(Self.percentEncoded($0))@" } ?? ""
        return "redis://\(credentials)127.0.0.1:\(port)"
    }

    /// `text` with every byte but ASCII letters and digits written %XX.
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let isPlain =
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            out += isPlain ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }
        return out
    }

    /// A new connection to this server.
    public func connect(
        database: Int = 0, connectTimeout: Duration = .seconds(2),
        commandTimeout: Duration = .seconds(2)
    ) throws -> RedisConnection {
        var parsed = try RedisURL(url)
        parsed.database = database
        return try RedisConnection(url: parsed, connectTimeout: connectTimeout, commandTimeout: commandTimeout)
    }

    public var isRunning: Bool { process.withLock { $0?.isRunning ?? false } }

    /// Starts the server again on the same port, if stopped; returns once it answers PING.
    public func start() throws {
        if isRunning { return }
        try Self.launch(port: port, directory: directory, password: password, replicaOf: replicaOf, into: process)
    }

    /// Stops the server as an operator would (SIGTERM: it closes every connection and exits;
    /// with persistence off it saves nothing) and waits for it to exit.
    public func stop() { signal(SIGTERM) }

    /// Kills the server (SIGKILL) and waits for it to exit.
    public func kill() { signal(SIGKILL) }

    private func signal(_ signal: Int32) {
        guard
            let running = process.withLock({ value -> Process? in
                defer { value = nil }
                return value
            })
        else { return }
        if running.isRunning { Glibc.kill(running.processIdentifier, signal) }
        running.waitUntilExit()
    }

    // MARK: - The shared server

    private static let sharedServer = Locked<TemporaryRedis?>(nil)

    /// The server shared by the tests of this process, started on first use and stopped when
    /// the process exits. Tests must not stop it or change its configuration.
    public static func shared() throws -> TemporaryRedis {
        try sharedServer.withLock { server in
            if let server { return server }
            let started = try TemporaryRedis()
            server = started
            atexit { TemporaryRedis.stopShared() }
            return started
        }
    }

    private static func stopShared() {
        let server = sharedServer.withLock { value -> TemporaryRedis? in
            defer { value = nil }
            return value
        }
        server?.stop()
        if let server { try? FileManager.default.removeItem(atPath: server.directory) }
    }

    // MARK: - Starting

    private static func launch(
        port: Int, directory: String, password: String?, replicaOf: Int?,
        into slot: Locked<Process?>
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try executable())
        var arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", directory, "--logfile", "redis.log", "--daemonize", "no"
        ]
        if let password { arguments += ["--requirepass", password, "--masterauth", password] }
        if let replicaOf { arguments += ["--replicaof", "127.0.0.1", String(replicaOf)] }
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        slot.withLock { $0 = process }

        // Ready when it answers PING; it starts in milliseconds, so 10 s means it will not.
        let url = RedisURL(host: "127.0.0.1", port: port, password: password)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if !process.isRunning { break }
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
        let log = (try? String(contentsOfFile: directory + "/redis.log", encoding: .utf8)) ?? ""
        throw TemporaryRedisError(
            message: "redis-server on port \(port) did not answer PING; its log ends:\n"
                + log.split(separator: "\n").suffix(5).joined(separator: "\n"))
    }

    static func executable(_ name: String = "redis-server") throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") + ["/usr/bin", "/usr/local/bin"] {
            let candidate = "\(folder)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw TemporaryRedisError(message: "\(name) not found (apt-get install redis-server redis-sentinel, or make deps-test)")
    }

    static func makeDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/insightd-redis-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TemporaryRedisError(message: "mkdtemp failed: errno \(errno)")
        }
        return String(cString: made)
    }

    /// A loopback port nobody listens on right now.
    public static func freePort() throws -> Int { try freeLoopbackPort() }
}

public struct TemporaryRedisError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
