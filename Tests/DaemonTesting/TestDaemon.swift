import Dispatch
import Foundation
import HTTPServer
import InsightAPI
import InsightApp
import InsightDomain
import JSON
import Locking

#if canImport(Glibc)
    import Glibc
#endif

/// How a test's requests reach a ``TestDaemon``: the same test reads the same way over either.
public enum Transport: Sendable {
    /// Straight to the daemon's API handler (`InsightService.handler`) in the test's process, as
    /// the server would call it, without a socket. The test sees what the handler answers:
    /// nothing the server adds (`Date`, `Content-Length`, `Connection`), the body of a `HEAD`
    /// answer (the server drops it), and nothing the server's parser decides (a body over
    /// `INSIGHTD_MAX_BODY_BYTES` is the handler's, not a `413`). For every test of what an
    /// endpoint answers, stores and logs.
    case inProcess
    /// Over a new socket to the daemon's listener: parsing, framing, connection limits,
    /// back-pressure, what the client on the wire receives.
    case live
}

/// Thrown when a velocity rebuild does not finish in time.
public struct VelocityRebuildTimeout: Error {}

/// A real insightd (HTTP on libevent, SQLite file, group-commit writer, metrics listener) on
/// 127.0.0.1:0 in a temporary state directory, and a blocking HTTP/1.1 client that reaches it
/// in process or over a socket (``Transport``). The one harness of the test targets that need
/// a daemon; the client library's tests reach it at ``baseURL``.
// @unchecked: stored properties are set in init (the service again only by `restart()`, called
// from the test's own thread between requests); requests use fresh sockets or fresh responders.
public final class TestDaemon: @unchecked Sendable {
    public let directory: URL
    public private(set) var service: InsightService
    public let logFile: URL
    /// How ``request(_:_:key:json:contentType:headers:port:over:)`` reaches the daemon unless told otherwise.
    public let transport: Transport
    private let clock: any Clock
    /// The API's port.
    public var port: Int { service.boundPort }
    /// The API's address, for clients that open their own connections.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The committed models of the repository (`models/`), found from this file's path.
    public static let committedModels = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("models").path

    /// Starts a daemon reached over `transport`. `models` serves the committed models (an
    /// explicit directory, so a missing one stops the start; otherwise insights answer
    /// `insightUnavailable`). Unless `waitForVelocity` is false, returns once velocity's rebuild
    /// is done (escalation by velocity on), as most tests expect.
    /// `INSIGHTD_TEST_TRANSPORT=live` in the environment sends every request over a socket, so
    /// that the in-process suites show that the wire answers as the handler does.
    public init(
        _ transport: Transport, clock: any Clock = SystemClock(), models: Bool = false, waitForVelocity: Bool = true,
        configure: (inout Settings) -> Void = { _ in }
    ) throws {
        self.transport = ProcessInfo.processInfo.environment["INSIGHTD_TEST_TRANSPORT"] == "live" ? .live : transport
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightd-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var settings = Settings()
        settings.listenPort = 0
        settings.metricsListen = ListenAddress(host: "127.0.0.1", port: 0)
        settings.threads = 2
        settings.stateDirectory = directory.appendingPathComponent("state").path
        settings.modelsDirectory = models ? Self.committedModels : directory.appendingPathComponent("no-models").path
        settings.modelsDirectoryExplicit = models
        settings.credentialCacheSeconds = 0
        settings.logLevel = .debug
        // Tests send many evaluations from one device quickly; the device limit has its own tests.
        settings.devicePerHour = 1_000_000
        configure(&settings)
        logFile = directory.appendingPathComponent("insightd.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        self.clock = clock
        service = try Self.start(settings, clock: clock, log: logFile)
        if waitForVelocity { try awaitVelocity() }
    }

    /// Starts insightd on `settings`, logging to the end of `log`: the one place the harness
    /// builds a service (and so opens its store).
    private static func start(_ settings: Settings, clock: any Clock, log: URL) throws -> InsightService {
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        return try InsightService.start(
            settings: settings, clock: clock,
            logger: Logger(minimumLevel: settings.logLevel, sink: handle))
    }

    /// Waits (up to 60 s) until velocity's rebuild is done.
    public func awaitVelocity() throws {
        let deadline = Date().addingTimeInterval(60)
        while !service.readiness.isVelocityReady {
            guard Date() < deadline else { throw VelocityRebuildTimeout() }
            usleep(2_000)
        }
    }

    /// Stops the daemon and starts a new one on the same state directory (a new port).
    public func restart(waitForVelocity: Bool = true) throws {
        service.stop()
        service = try Self.start(service.settings, clock: clock, log: logFile)
        if waitForVelocity { try awaitVelocity() }
    }

    deinit {
        service.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: - Callers

    /// Creates a caller directly in the store and returns its API key.
    public func createCaller(
        roles: Set<Role>, environment: InsightDomain.Environment = .production,
        name: String = "test", tenant: String = Tenant.defaultName, rate: Double = 10_000,
        burst: Int = 10_000
    ) throws -> (callerId: String, key: String) {
        let id = "caller_\(UUID().uuidString.prefix(8).lowercased())"
        let (caller, key) = try callerRegistration().create(
            name: name, tenant: tenant, environment: environment, roles: roles,
            rate: rate, burst: burst, now: SystemClock().now(), callerId: id)
        return (caller.callerId, key.token)
    }

    /// The daemon's store as insightctl opens it to register a caller: the one place the
    /// harness opens the store itself (the daemon opens its own in ``start(_:clock:log:)``).
    private func callerRegistration() throws -> any CallerRegistration {
        try StoreBackend.registration(StoreLocation(service.settings), now: SystemClock().now())
    }

    /// ``createCaller(roles:environment:name:tenant:rate:burst:)`` by role and environment names
    /// (`evaluate`, `labels`, `admin`; `production`, `sandbox`), for tests that import the client
    /// library and not the server's modules.
    public func createKey(roles: [String], environment: String = "sandbox") throws -> String {
        try createCaller(
            roles: Set(roles.map { Role(rawValue: $0)! }),
            environment: InsightDomain.Environment(rawValue: environment)!,
            name: "client-test", rate: 1000, burst: 1000
        ).key
    }

    /// Rotates the signing key (as `insightctl signing-keys rotate` does) and has the daemon
    /// pick it up now; returns the new key's id.
    @discardableResult
    public func rotateSigningKey() throws -> String {
        let entry = try SigningKeyDirectory.rotate(
            directory: service.settings.resolvedSigningKeyDirectory,
            now: SystemClock().now(), activateAfter: 0)
        service.reloadSigningKeysIfChanged()
        return entry.keyId
    }

    // MARK: - Requests

    /// An answer as a test reads it: header names in lower case (the last of a repeated one).
    public struct Response: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: [UInt8]
        public init(status: Int, headers: [String: String], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }
        public var json: JSONValue? { try? JSONParser.parse(body) }
        public var object: JSONObject? { if case .object(let o)? = json { return o } else { return nil } }
        /// A problem's `code`.
        public var code: String? { if case .string(let c)? = object?["code"] { return c } else { return nil } }
        public func string(_ key: String) -> String? { if case .string(let s)? = object?[key] { return s } else { return nil } }
    }

    /// Sends one request and reads the whole answer: over this daemon's ``transport`` unless
    /// `transport` says otherwise, and over a socket whenever `port` names one (the metrics
    /// listener's, another daemon's). The request's fields are the same either way.
    public func request(
        _ method: String, _ path: String, key: String? = nil, json: String? = nil,
        contentType: String? = "application/json", headers: [String: String] = [:],
        port: Int? = nil, over transport: Transport? = nil
    ) throws -> Response {
        var fields: [(String, String)] = [("Host", "localhost"), ("Connection", "close")]
        if let key { fields.append(("Authorization", "Bearer \(key)")) }
        let body = Array((json ?? "").utf8)
        if json != nil {
            if let contentType { fields.append(("Content-Type", contentType)) }
            fields.append(("Content-Length", "\(body.count)"))
        }
        for (name, value) in headers { fields.append((name, value)) }
        if port == nil, (transport ?? self.transport) == .inProcess {
            return try Self.answer(Self.request(method, path, fields: fields, body: body), from: service.handler)
        }
        var head = "\(method) \(path) HTTP/1.1\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return try exchange(Array(head.utf8) + body, port: port)
    }

    /// A request to the metrics listener (`INSIGHTD_METRICS_LISTEN`): in process, to a metrics
    /// handler over the daemon's registry (the listener's own kind).
    public func metricsRequest(_ method: String = "GET", _ path: String = "/metrics") throws -> Response {
        guard let metricsPort = service.metricsPort else { throw AppError("the metrics listener is off") }
        if transport == .inProcess {
            return try Self.answer(
                Self.request(method, path, fields: [("Host", "localhost")], body: []),
                from: MetricsHandler(registry: service.metrics))
        }
        return try request(method, path, port: metricsPort)
    }

    /// The metrics listener's `/metrics` page.
    public func scrape() throws -> String {
        String(decoding: try metricsRequest().body, as: UTF8.self)
    }

    /// The request the server would hand its handler for these fields.
    static func request(_ method: String, _ target: String, fields: [(String, String)], body: [UInt8]) -> HTTPRequest {
        let query = target.firstIndex(of: "?")
        return HTTPRequest(
            method: method, path: String(target[..<(query ?? target.endIndex)]),
            query: query.map { String(target[target.index(after: $0)...]) },
            headers: HTTPHeaders(fields), body: body, remoteAddress: "127.0.0.1:1")
    }

    /// What `handler` answers to `request`, waited for (up to 30 s) on this thread while the
    /// daemon's threads (its writer, its store's completions) finish it.
    static func answer(_ request: HTTPRequest, from handler: any HTTPHandler) throws -> Response {
        let answer = Locked<HTTPResponse?>(nil)
        let answered = DispatchSemaphore(value: 0)
        handler.handle(
            request,
            responder: HTTPResponder { response in
                answer.withLock { $0 = response }
                answered.signal()
            })
        guard answered.wait(timeout: .now() + 30) == .success, let response = answer.withLock({ $0 }) else {
            throw AppError("\(request.method) \(request.path): no answer within 30 s")
        }
        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name.lowercased()] = value }
        return Response(status: response.status, headers: headers, body: response.body)
    }

    // MARK: - Sockets

    /// A socket connected to the daemon, whose reads give up after `receiveTimeout` seconds.
    public func connectedSocket(receiveTimeout: Int = 10, port: Int? = nil) throws -> Int32 {
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
    public func exchange(_ bytes: [UInt8], port: Int? = nil) throws -> Response {
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

    /// The first response in `bytes`, once they hold all of it.
    public static func parse(_ bytes: [UInt8]) -> Response? {
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

    // MARK: - What the daemon keeps

    /// The log so far, deferred request lines included.
    public func logText() throws -> Data {
        service.logger.flush()
        return try Data(contentsOf: logFile)
    }

    /// The statuses of the requests the daemon answered on `route` (e.g. `/v1/evaluations`), in
    /// order, read from its request log.
    public func answeredStatuses(route: String) throws -> [Int] {
        let text = String(decoding: try logText(), as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["msg"] as? String == "request", object["route"] as? String == route,
                let status = object["status"] as? NSNumber
            else { return nil }
            return status.intValue
        }
    }

    /// ``answeredStatuses(route:)`` once at least `count` requests are logged (the log line may
    /// follow the response by a moment), or after two seconds.
    public func settledStatuses(route: String, count: Int) async throws -> [Int] {
        for _ in 0..<40 {
            let statuses = try answeredStatuses(route: route)
            if statuses.count >= count {
                try await Task.sleep(nanoseconds: 100_000_000)  // and no more than that
                return try answeredStatuses(route: route)
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return try answeredStatuses(route: route)
    }

    /// Every byte of every file in the state directory, and the log.
    public func allStoredBytes() throws -> Data {
        var data = Data()
        let enumerator = FileManager.default.enumerator(atPath: service.settings.stateDirectory)
        while let name = enumerator?.nextObject() as? String {
            let path = (service.settings.stateDirectory as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                do {
                    data.append(try Data(contentsOf: URL(fileURLWithPath: path)))
                } catch  where !FileManager.default.fileExists(atPath: path) {
                    // Gone since it was listed (SQLite deletes a WAL file when its last
                    // connection closes): nothing of it is left to scan.
                }
            }
        }
        data.append(try logText())
        return data
    }
}
