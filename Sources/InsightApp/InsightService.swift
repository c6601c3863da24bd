import CoachingModel
import Foundation
import HTTPServer
import InsightAPI
import InsightDomain
import InsightStorage
import JSON
import SQLiteClient

/// The composition root: builds insightd from its settings, starts it in order (state,
/// store and migrations, hash key, models, writer, HTTP), and stops it in reverse.
public final class InsightService: @unchecked Sendable {
    // @unchecked: the mutable parts are set in `start()` and read after it, from the thread
    // that owns the service's lifecycle (main); request threads see only Sendable members.
    public let settings: Settings
    public let logger: Logger
    public let readiness = Readiness()
    public let models = InsightModels(nil)
    private let clock: any Clock
    private var writer: GroupCommitWriter?
    private var server: HTTPServer?
    private var complianceTimer: DispatchSourceTimer?
    /// The in-memory rate limits; reporting counts are refreshed from the store.
    public private(set) var limiter: RateLimiter!
    private var administration: SQLiteAdministration?

    public init(settings: Settings, clock: any Clock = SystemClock(), logger: Logger? = nil) {
        self.settings = settings
        self.clock = clock
        self.logger = logger ?? Logger(minimumLevel: settings.logLevel)
    }

    /// The port the server listens on (useful with port 0).
    public var boundPort: Int { server?.boundPort ?? 0 }

    /// Starts everything; throws with an operator-readable message when something is wrong.
    public func start() throws {
        try FileManager.default.createDirectory(atPath: settings.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let (db, applied) = try Database.openMigrated(path: settings.databasePath, now: clock.now())
        for name in applied { logger.info("migration applied", [("migration", .string(name))]) }

        let keyPath = settings.resolvedHashKeyFile
        let key = try HashKeyFile.load(path: keyPath, createIfMissing: settings.hashKeyFile == nil)
        if HashKeyFile.isExposed(path: keyPath) {
            logger.warning("hash key file is readable by group or others; chmod 600 it", [("path", .string(keyPath))])
        }
        let hasher = try SubjectHasher(key: key)

        try reloadModels()

        let writer = GroupCommitWriter(connection: db, capacity: settings.writeQueueCapacity, maxBatch: settings.commitBatch)
        writer.start()
        self.writer = writer

        let administration = try SQLiteAdministration(path: settings.databasePath, writer: writer)
        self.administration = administration
        let limiter = RateLimiter(settings: settings.rateLimitSettings, clock: clock)
        self.limiter = limiter
        // Reporting counts come from the store before traffic: penalties survive a restart.
        try limiter.refresh(from: administration)
        startComplianceRefresh()

        var configuration = APIConfiguration()
        configuration.consumptionGraceMilliseconds = Milliseconds(settings.consumptionGrace) * 1000
        configuration.credentialCacheSeconds = Double(settings.credentialCacheSeconds)
        let logger = self.logger
        let handler = InsightAPIHandler(APIDependencies(
            ledger: SQLiteLedger(writer: writer),
            credentials: try SQLiteCredentialDirectory(path: settings.databasePath),
            models: models, hasher: hasher, clock: clock, readiness: readiness, limiter: limiter,
            administration: administration, configuration: configuration,
            onRequest: { summary in
                var fields: [(String, JSONValue)] = [
                    ("method", .string(summary.method)), ("route", .string(summary.route)),
                    ("status", .number(Double(summary.status))),
                    ("durationMs", .number((summary.durationSeconds * 1000).rounded())),
                ]
                if let code = summary.code { fields.append(("code", .string(code))) }
                if let caller = summary.callerId { fields.append(("callerId", .string(caller))) }
                logger.log(summary.status >= 500 ? .error : .debug, "request", fields)
            }))
        let server = HTTPServer(configuration: settings.httpConfiguration, handler: handler)
        try server.start()
        self.server = server
        readiness.set(true)
        logger.info("insightd ready", [
            ("listen", .string("\(settings.listenHost):\(server.boundPort)")),
            ("stateDir", .string(settings.stateDirectory)),
            ("threads", .number(Double(settings.threads))),
            ("models", .array((models.snapshot?.versions.map { .string($0.version) }) ?? [])),
        ])
    }

    /// Loads the model versions from the models directory (at start and on SIGHUP). A missing
    /// default directory leaves insights unavailable; anything malformed is an error.
    public func reloadModels() throws {
        let directory = settings.modelsDirectory
        guard FileManager.default.fileExists(atPath: directory) else {
            if settings.modelsDirectoryExplicit { throw AppError("models directory \(directory) does not exist") }
            logger.warning("no models directory; coaching insights answer insightUnavailable",
                           [("modelsDir", .string(directory))])
            models.replace(nil)
            return
        }
        do {
            let registry = try ModelRegistry.load(directory: directory, current: settings.currentModel)
            models.replace(registry)
            logger.info("models loaded", [("current", .string(registry.currentVersion)),
                                          ("versions", .array(registry.versions.map { .string($0.version) }))])
        } catch {
            throw AppError("cannot load models from \(directory): \(error)")
        }
    }

    /// Recounts consumption reporting periodically, off the request path.
    private func startComplianceRefresh() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "insightd.compliance"))
        let interval = DispatchTimeInterval.seconds(settings.complianceRefresh)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self] in self?.refreshCompliance() }
        timer.resume()
        complianceTimer = timer
    }

    /// Reads the reporting counts from the store into the rate limiter now.
    public func refreshCompliance() {
        guard let administration, let limiter else { return }
        do { try limiter.refresh(from: administration) } catch {
            logger.error("cannot count consumption reporting", [("error", .string("\(error)"))])
        }
    }

    /// Drains and stops: readiness off, stop accepting, finish in-flight requests, then
    /// commit what is queued and close the store.
    public func stop() {
        complianceTimer?.cancel()
        complianceTimer = nil
        readiness.set(false)
        server?.shutdown(timeout: Double(settings.shutdownTimeout))
        writer?.stop()
        logger.info("insightd stopped")
    }
}
