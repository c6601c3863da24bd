import Foundation
import InsightApp
import InsightDomain

/// A real insightd in-process (HTTP on libevent, SQLite file, group-commit writer) on
/// 127.0.0.1:0 in a temporary state directory — the minimal part of the API tests' LiveDaemon
/// the client tests need. Only this file sees the server modules, so the test files that use
/// the client import `InsightClient` alone and its names stay unambiguous.
// @unchecked: every stored property is a constant set in init.
final class TestDaemon: @unchecked Sendable {
    let directory: URL
    let service: InsightService
    let logFile: URL
    var baseURL: URL { URL(string: "http://127.0.0.1:\(service.boundPort)")! }

    /// The committed models of the repository (`models/`), found from this file's path.
    static let modelsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("models").path

    /// Starts a daemon. `models` loads the repository's models (otherwise insights answer
    /// `insightUnavailable`); `writeQueueCapacity` 0 makes every write answer 503 + Retry-After.
    init(models: Bool = true, writeQueueCapacity: Int? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightd-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var settings = Settings()
        settings.listenPort = 0
        settings.metricsListen = nil
        settings.threads = 2
        settings.stateDirectory = directory.appendingPathComponent("state").path
        settings.modelsDirectory = models ? Self.modelsDirectory : directory.appendingPathComponent("no-models").path
        settings.modelsDirectoryExplicit = models
        settings.credentialCacheSeconds = 0
        settings.logLevel = .debug
        if let writeQueueCapacity { settings.writeQueueCapacity = writeQueueCapacity }
        logFile = directory.appendingPathComponent("insightd.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logFile)
        service = try InsightService.start(settings: settings, logger: Logger(minimumLevel: settings.logLevel, sink: handle))
    }

    /// Rotates the signing key (as `insightctl signing-keys rotate` does) and has the daemon
    /// pick it up now; returns the new key's id.
    @discardableResult
    func rotateSigningKey() throws -> String {
        let entry = try SigningKeyDirectory.rotate(directory: service.settings.resolvedSigningKeyDirectory,
                                                   now: SystemClock().now(), activateAfter: 0)
        service.reloadSigningKeysIfChanged()
        return entry.keyId
    }

    deinit {
        service.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Creates a caller in the store and returns its API key. `roles` are role names
    /// (`evaluate`, `labels`, `admin`); `environment` is `production` or `sandbox`.
    func createKey(roles: [String], environment: String = "sandbox") throws -> String {
        let registration = try StoreBackend.registration(StoreLocation(service.settings), now: SystemClock().now())
        let (_, key) = try registration.create(
            name: "client-test", tenant: Tenant.defaultName, environment: InsightDomain.Environment(rawValue: environment)!,
            roles: Set(roles.map { Role(rawValue: $0)! }), rate: 1000, burst: 1000,
            now: SystemClock().now(), callerId: "caller_\(UUID().uuidString.prefix(8).lowercased())")
        return key.token
    }

    /// The statuses of the requests the daemon answered on `route` (e.g. `/v1/evaluations`), in
    /// order, read from its request log.
    func answeredStatuses(route: String) throws -> [Int] {
        service.logger.flush()
        let text = try String(contentsOf: logFile, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["msg"] as? String == "request", object["route"] as? String == route,
                  let status = object["status"] as? NSNumber else { return nil }
            return status.intValue
        }
    }

    /// ``answeredStatuses(route:)`` once at least `count` requests are logged (the log line may
    /// follow the response by a moment), or after two seconds.
    func settledStatuses(route: String, count: Int) async throws -> [Int] {
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
}
