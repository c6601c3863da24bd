import Foundation
import Locking
import LoopbackPort
import PostgresClient

/// A real PostgreSQL server for tests, started as an ordinary process: `initdb` into a new
/// temporary directory, then `pg_ctl start` listening on 127.0.0.1 only, on a free port, with
/// its unix socket in that directory and `fsync` on. `destroy()` stops it and removes the
/// directory; whatever is still running when the process exits is stopped then.
///
/// initdb refuses to run as root, so as root the server's commands run as the `postgres` user
/// the Debian package creates (`runuser`), and the directory belongs to it. The binaries are
/// found in `INSIGHTD_POSTGRES_BIN`, then `/usr/lib/postgresql/15/bin`, then `PATH`.
///
/// Creating a cluster takes about a second: a suite shares one (`shared()`) and gives each test
/// its own database (`createDatabase()`).
public final class TemporaryPostgres: Sendable {
    /// How `stop` ends the server (`pg_ctl stop -m …`).
    public enum StopMode: String, Sendable {
        /// Rolls back open transactions, closes sessions, then a checkpoint.
        case fast
        /// Kills every server process at once, as a crash would: the next start recovers from
        /// the WAL.
        case immediate
    }

    /// The temporary directory: the cluster in `data/`, the server log, the unix socket.
    public let directory: String
    public let user = "insightd"
    public let password: String
    /// The server's port: chosen free at start, and again if another process took it first.
    public var port: Int { portBox.withLock { $0 } }
    private let portBox: Locked<Int>
    private let binaries: String
    private let running = Locked(false)

    /// A connection URI for `database` (default: the `postgres` database).
    public func url(database: String = "postgres") -> String {
        "postgres://\(user):\(password)@127.0.0.1:\(port)/\(database)"
    }

    /// The data directory (`pg_ctl -D`).
    public var dataDirectory: String { directory + "/data" }

    /// Creates a cluster in a new temporary directory and starts it. `pickPort` names a port
    /// nothing listens on (the kernel's pick); another process may bind it before the server
    /// does, so a start that fails to bind is tried again, up to three times, on a new pick.
    public init(pickPort: () throws -> Int = TemporaryPostgres.freePort) throws {
        TemporaryPostgres.registerExitCleanup()
        TemporaryPostgres.removeAbandoned()
        binaries = try TemporaryPostgres.findBinaries()
        password = (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined()
        let base = FileManager.default.temporaryDirectory.path
        directory = "\(base)/\(TemporaryPostgres.prefix)\(getpid())-\(UUID().uuidString.prefix(8))"
        portBox = Locked(try pickPort())
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        TemporaryPostgres.live.withLock { _ = $0.insert(directory) }
        do {
            try giveToServerUser(directory)
            let passwordFile = directory + "/password"
            try password.write(toFile: passwordFile, atomically: false, encoding: .utf8)
            try giveToServerUser(passwordFile)
            try run(
                "initdb",
                [
                    "-D", dataDirectory, "-U", user, "--pwfile", passwordFile, "-E", "UTF8",
                    "--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"
                ])
            let settings = """

                listen_addresses = '127.0.0.1'
                include = 'port.conf'
                unix_socket_directories = '\(directory)'
                fsync = on
                synchronous_commit = on
                shared_buffers = 32MB
                max_connections = 50

                """
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(settings.utf8))
            try handle.close()
            for attempt in 1...3 {
                try writePort()
                do {
                    try start()
                    break
                } catch let error as TemporaryPostgresError where attempt < 3 && error.message.contains("could not bind") {
                    let next = try pickPort()
                    portBox.withLock { $0 = next }
                }
            }
        } catch {
            destroy()
            throw error
        }
    }

    /// The server every test of the process shares, started on first use.
    public static func shared() throws -> TemporaryPostgres {
        try sharedServer.get()
    }

    private static let sharedServer = Result { try TemporaryPostgres() }

    /// The server's port, in the file postgresql.conf includes.
    private func writePort() throws {
        let file = dataDirectory + "/port.conf"
        try "port = \(port)\n".write(toFile: file, atomically: false, encoding: .utf8)
        try giveToServerUser(file)
    }

    /// Starts the server (again, after `stop`) on the same directory and port; waits until it
    /// accepts connections.
    public func start() throws {
        try run("pg_ctl", ["start", "-D", dataDirectory, "-l", directory + "/server.log", "-w", "-t", "60"])
        running.withLock { $0 = true }
    }

    /// Stops the server (`pg_ctl stop -m mode`) and waits until it is gone.
    public func stop(mode: StopMode = .fast) throws {
        try run("pg_ctl", ["stop", "-D", dataDirectory, "-m", mode.rawValue, "-w", "-t", "60"])
        running.withLock { $0 = false }
    }

    /// True between `start` and `stop`.
    public var isRunning: Bool { running.withLock { $0 } }

    /// Stops the server if it runs and removes the directory.
    public func destroy() {
        if isRunning { try? stop(mode: .immediate) }
        try? FileManager.default.removeItem(atPath: directory)
        TemporaryPostgres.live.withLock { _ = $0.remove(directory) }
    }

    /// A new connection to `database`.
    public func connect(database: String = "postgres") throws -> PostgresConnection {
        try PostgresConnection(url: url(database: database))
    }

    /// Creates a new empty database with a unique name and returns its name.
    public func createDatabase() throws -> String {
        let name = "test_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        try connect().execute("CREATE DATABASE \(name)")
        return name
    }

    // MARK: Processes

    /// Runs a PostgreSQL binary (as the server user when root) and throws with its output and
    /// the server log's tail when it fails.
    private func run(_ tool: String, _ arguments: [String]) throws {
        let output = directory + "/\(tool).out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let status = try TemporaryPostgres.execute(binaries + "/" + tool, arguments, output: output)
        guard status == 0 else {
            let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            throw TemporaryPostgresError(
                message: "\(tool) \(arguments.first ?? "") exited with \(status): \(said)\(log.suffix(2_000))")
        }
    }

    /// Runs `executable` and waits for it, with its output in the file `output`.
    ///
    /// posix_spawn rather than Foundation's `Process`, which on Linux waits for every inheritor of
    /// its internal descriptors to exit, and the server pg_ctl starts inherits them and keeps
    /// running. Descriptors above stderr are closed on exec, so that the server holds none of the
    /// test process's sockets or files.
    private static func execute(_ executable: String, _ arguments: [String], output: String) throws -> Int32 {
        let argv =
            getuid() == 0
            ? ["/usr/sbin/runuser", "-u", serverUser, "--", executable] + arguments
            : [executable] + arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        markDescriptorsCloseOnExec()
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        defer { cArguments.forEach { free($0) } }
        cArguments.append(nil)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw TemporaryPostgresError(message: "cannot run \(argv[0]): errno \(spawned)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw TemporaryPostgresError(message: "waitpid failed: errno \(errno)") }
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import (macros).
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// Sets close-on-exec on every descriptor above stderr (posix_spawn's `addclosefrom_np` is
    /// not imported into Swift).
    private static func markDescriptorsCloseOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            guard let fd = Int32(name), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0, flags & FD_CLOEXEC == 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    private static let serverUser = "postgres"

    /// As root, hands `path` to the server user, which must own the cluster.
    private func giveToServerUser(_ path: String) throws {
        guard getuid() == 0 else { return }
        guard let entry = getpwnam(TemporaryPostgres.serverUser) else {
            throw TemporaryPostgresError(message: "running as root, and there is no `postgres` user to run the server as")
        }
        guard chown(path, entry.pointee.pw_uid, entry.pointee.pw_gid) == 0 else {
            throw TemporaryPostgresError(message: "chown \(path) failed: errno \(errno)")
        }
    }

    private static func findBinaries() throws -> String {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["INSIGHTD_POSTGRES_BIN"] { candidates.append(configured) }
        candidates.append("/usr/lib/postgresql/15/bin")
        for entry in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(String(entry))
        }
        for candidate in candidates
        where FileManager.default.isExecutableFile(atPath: candidate + "/initdb")
            && FileManager.default.isExecutableFile(atPath: candidate + "/pg_ctl")
        {
            return candidate
        }
        throw TemporaryPostgresError(message: "initdb and pg_ctl not found (install postgresql-15 or set INSIGHTD_POSTGRES_BIN)")
    }

    /// A port nothing listens on now.
    public static func freePort() throws -> Int { try freeLoopbackPort() }

    // MARK: Cleaning up

    private static let prefix = "insightd-pg-"

    /// Directories of clusters this process created and has not destroyed.
    private static let live = Locked(Set<String>())

    private static let exitCleanup: Void = {
        atexit { TemporaryPostgres.stopAllAtExit() }
    }()

    private static func registerExitCleanup() { _ = exitCleanup }

    private static func stopAllAtExit() {
        for directory in live.withLock({ $0 }) { stopAndRemove(directory) }
    }

    /// Clusters left by a test process that died without cleaning up: their directory names
    /// carry the pid of a process that no longer exists.
    private static func removeAbandoned() {
        let base = FileManager.default.temporaryDirectory.path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
        for name in names where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }),
                kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            stopAndRemove(base + "/" + name)
        }
    }

    private static func stopAndRemove(_ directory: String) {
        if FileManager.default.fileExists(atPath: directory + "/data/postmaster.pid"), let binaries = try? findBinaries() {
            _ = FileManager.default.createFile(atPath: directory + "/stop.out", contents: nil)
            _ = try? execute(
                binaries + "/pg_ctl", ["stop", "-D", directory + "/data", "-m", "immediate", "-w"],
                output: directory + "/stop.out")
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A temporary server could not be created, started or stopped; the message has the tool's
/// output and the end of the server log.
public struct TemporaryPostgresError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
