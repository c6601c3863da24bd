import Foundation
import InsightApp
import InsightDomain
import JSON
import XCTest

#if canImport(Glibc)
import Glibc
#endif

struct VelocityRebuildTimeout: Error {}

/// A real insightd (HTTP on libevent, SQLite file, group-commit writer) on 127.0.0.1:0 in a
/// temporary state directory, plus a blocking HTTP/1.1 client for tests.
// @unchecked: stored properties are set in init (the service again only by `restart()`, called
// from the test's own thread between requests); requests use fresh sockets.
final class LiveDaemon: @unchecked Sendable {
    let directory: URL
    private(set) var service: InsightService
    let logFile: URL
    private let clock: any Clock
    var port: Int { service.boundPort }

    /// Starts a daemon; unless `waitForVelocity` is false, returns once velocity's rebuild is done
    /// (escalation by velocity on), as most tests expect.
    init(clock: any Clock = SystemClock(), waitForVelocity: Bool = true,
         configure: (inout Settings) -> Void = { _ in }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightd-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var settings = Settings()
        settings.listenPort = 0
        settings.metricsListen = ListenAddress(host: "127.0.0.1", port: 0)
        settings.threads = 2
        settings.stateDirectory = directory.appendingPathComponent("state").path
        settings.modelsDirectory = directory.appendingPathComponent("no-models").path
        settings.credentialCacheSeconds = 0
        settings.logLevel = .debug
        // Tests send many evaluations from one device quickly; the device limit has its own tests.
        settings.devicePerHour = 1_000_000
        configure(&settings)
        logFile = directory.appendingPathComponent("insightd.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logFile)
        self.clock = clock
        service = try InsightService.start(settings: settings, clock: clock,
                                           logger: Logger(minimumLevel: settings.logLevel, sink: handle))
        if waitForVelocity { try awaitVelocity() }
    }

    /// Waits (up to 60 s) until velocity's rebuild is done.
    func awaitVelocity() throws {
        let deadline = Date().addingTimeInterval(60)
        while !service.readiness.isVelocityReady {
            guard Date() < deadline else { throw VelocityRebuildTimeout() }
            usleep(2_000)
        }
    }

    /// Stops the daemon and starts a new one on the same state directory (a new port).
    func restart(waitForVelocity: Bool = true) throws {
        service.stop()
        let handle = try FileHandle(forWritingTo: logFile)
        handle.seekToEndOfFile()
        service = try InsightService.start(settings: service.settings, clock: clock,
                                           logger: Logger(minimumLevel: service.settings.logLevel, sink: handle))
        if waitForVelocity { try awaitVelocity() }
    }

    deinit {
        service.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Creates a caller directly in the store and returns its API key.
    func createCaller(roles: Set<Role>, environment: InsightDomain.Environment = .production,
                      name: String = "test", tenant: String = Tenant.defaultName, rate: Double = 10_000,
                      burst: Int = 10_000) throws -> (callerId: String, key: String) {
        let id = "caller_\(UUID().uuidString.prefix(8).lowercased())"
        let registration = try StoreBackend.registration(StoreLocation(service.settings), now: SystemClock().now())
        let (caller, key) = try registration.create(name: name, tenant: tenant, environment: environment, roles: roles,
                                                    rate: rate, burst: burst, now: SystemClock().now(), callerId: id)
        return (caller.callerId, key.token)
    }

    struct Response {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
        var json: JSONValue? { try? JSONParser.parse(body) }
        var object: JSONObject? { if case .object(let o)? = json { return o } else { return nil } }
        var code: String? { if case .string(let c)? = object?["code"] { return c } else { return nil } }
        func string(_ key: String) -> String? { if case .string(let s)? = object?[key] { return s } else { return nil } }
    }

    /// Sends one request on a new connection and reads the whole response.
    func request(_ method: String, _ path: String, key: String? = nil, json: String? = nil,
                 contentType: String? = "application/json", headers: [String: String] = [:],
                 port: Int? = nil) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        let body = Array((json ?? "").utf8)
        if json != nil {
            if let contentType { head += "Content-Type: \(contentType)\r\n" }
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return try exchange(Array(head.utf8) + body, port: port)
    }

    /// A request to the metrics listener (`INSIGHTD_METRICS_LISTEN`).
    func metricsRequest(_ method: String = "GET", _ path: String = "/metrics") throws -> Response {
        try request(method, path, port: try XCTUnwrap(service.metricsPort, "the metrics listener is off"))
    }

    /// The metrics listener's `/metrics` page.
    func scrape() throws -> String {
        String(decoding: try metricsRequest().body, as: UTF8.self)
    }

    /// A socket connected to the daemon, whose reads give up after `receiveTimeout` seconds.
    func connectedSocket(receiveTimeout: Int = 10, port: Int? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AppError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port ?? self.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw AppError("connect failed")
        }
        return fd
    }

    /// Sends raw bytes and parses the response (the server closes after answering).
    func exchange(_ bytes: [UInt8], port: Int? = nil) throws -> Response {
        let fd = try connectedSocket(port: port)
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }  // the server may answer (e.g. 413) and close before reading all
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received.append(contentsOf: buffer[0..<n])
            if let parsed = Self.parse(received) { return parsed }
        }
        guard let parsed = Self.parse(received) else { throw AppError("incomplete response: \(String(decoding: received, as: UTF8.self))") }
        return parsed
    }

    static func parse(_ bytes: [UInt8]) -> Response? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let head = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard bytes.count >= end + 4 + length else { return nil }
        return Response(status: status, headers: headers, body: Array(bytes[(end + 4)..<(end + 4 + length)]))
    }

    /// The log so far, deferred request lines included.
    func logText() throws -> Data {
        service.logger.flush()
        return try Data(contentsOf: logFile)
    }

    /// Every byte of every file in the state directory, and the log.
    func allStoredBytes() throws -> Data {
        var data = Data()
        let enumerator = FileManager.default.enumerator(atPath: service.settings.stateDirectory)
        while let name = enumerator?.nextObject() as? String {
            let path = (service.settings.stateDirectory as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                do {
                    data.append(try Data(contentsOf: URL(fileURLWithPath: path)))
                } catch where !FileManager.default.fileExists(atPath: path) {
                    // Gone since it was listed (SQLite deletes a WAL file when its last
                    // connection closes): nothing of it is left to scan.
                }
            }
        }
        data.append(try logText())
        return data
    }
}
