import CoachingModel
import Foundation
import HTTPServer
import InsightAPI
import InsightDomain
import InsightServices
import InsightStorage
import JSON
import SQLiteClient
import Telemetry

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
    /// The upkeep running on schedules: the reporting recount, the hash key file's polling, retention.
    private var jobs: [PeriodicJob] = []
    /// Set at start; retention counts from it when the wall clock has run ahead.
    private var measuredTime: MeasuredTime?
    private var instanceLock: InstanceLock?
    /// Subjects who switched insights off, indexed in memory.
    public let denials: DenialIndex
    /// The in-memory rate limits; reporting counts are refreshed from the store.
    public private(set) var limiter: RateLimiter!
    private var administration: SQLiteAdministration?
    /// The identifier hash keys; reloaded when the key file changes (a rotation).
    public private(set) var hashKeys: HashKeys!
    /// The key file as last read; set at start, then touched only on the keyring job's queue.
    private var keyringFingerprint: String?
    /// Velocity counters over hashed identifiers.
    public private(set) lazy var velocity = VelocityTracker(clock: clock)
    /// Every metric the daemon exports at `/metrics`.
    public let metrics = MetricsRegistry()
    private let overdueReports: GaugeFamily
    private let complianceRecountSeconds: GaugeFamily
    /// When the next recount of consumption reporting may run (`DispatchTime` nanoseconds);
    /// touched only on the compliance queue.
    private var nextComplianceRecount: UInt64 = 0

    public init(settings: Settings, clock: any Clock = SystemClock(), logger: Logger? = nil) {
        self.settings = settings
        self.clock = clock
        self.logger = logger ?? Logger(minimumLevel: settings.logLevel)
        denials = DenialIndex(capacity: settings.maxDenialsPerTenant)
        overdueReports = metrics.gauge("insightd_consumption_overdue",
                                       help: "Evaluations past their reportConsumptionBy without a report, in the counting window.",
                                       labels: ["environment"])
        complianceRecountSeconds = metrics.gauge(
            "insightd_compliance_recount_seconds",
            help: "Duration of the last recount of consumption reporting from the store.", labels: [])
        metrics.gauge("insightd_build_info", help: "Always 1; the labels say which build runs.", labels: ["version"])
            .set(Daemon.version, to: 1)
        ProcessMetrics.register(on: metrics)
    }

    /// The port the server listens on (useful with port 0).
    public var boundPort: Int { server?.boundPort ?? 0 }

    /// Starts everything; throws with an operator-readable message when something is wrong.
    public func start() throws {
        try FileManager.default.createDirectory(atPath: settings.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        instanceLock = try InstanceLock(directory: settings.stateDirectory)
        let (db, applied) = try Database.openMigrated(path: settings.databasePath, now: clock.now(),
                                                       cacheKiB: Database.writerCacheKiB)
        for name in applied { logger.info("migration applied", [("migration", .string(name))]) }

        let keyPath = settings.resolvedHashKeyFile
        hashKeys = HashKeys(try KeyringFile.keyring(path: keyPath, createIfMissing: settings.hashKeyFile == nil, now: clock.now()))
        keyringFingerprint = KeyringFile.fingerprint(path: keyPath)
        if KeyringFile.isExposed(path: keyPath) {
            logger.warning("hash key file is readable by group or others; chmod 600 it", [("path", .string(keyPath))])
        }

        try reloadModels()

        let commitDuration = metrics.histogram("insightd_store_commit_duration_seconds",
                                               help: "Duration of one group commit (fsync included).", buckets: Buckets.commitDuration)
            .labels()
        let batchSize = metrics.histogram("insightd_store_commit_batch_size", help: "Writes committed together.",
                                          buckets: Buckets.powersOfTwo).labels()
        let writeFailures = metrics.counter("insightd_store_write_failures_total",
                                            help: "Writes the store could not commit (answered 503).").labels()
        let failureLog = StoreFailureLog(logger: logger)
        let writer = GroupCommitWriter(connection: db, capacity: settings.writeQueueCapacity, maxBatch: settings.commitBatch,
                                       observer: { commit in
                                           commitDuration.observe(commit.seconds)
                                           batchSize.observe(Double(commit.size))
                                           if let error = commit.firstError {
                                               writeFailures.increment(by: Double(commit.failed))
                                               failureLog.failed(commit.failed, error: error)
                                           } else {
                                               failureLog.committed()
                                           }
                                       })
        metrics.collect("insightd_write_queue_depth", help: "Writes waiting for the writer.", type: .gauge) {
            [(labels: [], value: Double(writer.depth))]
        }
        writer.start()
        self.writer = writer

        let administration = try SQLiteAdministration(path: settings.databasePath, writer: writer)
        self.administration = administration
        let limiter = RateLimiter(settings: settings.rateLimitSettings, clock: clock)
        self.limiter = limiter
        // Reporting counts come from the store before traffic: penalties survive a restart.
        try limiter.refresh(from: administration)
        startComplianceRefresh()

        // Velocity counters come from the store's last 7 days before traffic: they survive a restart.
        let escalation = try loadEscalationPolicy()
        let started = DispatchTime.now()
        let history = try administration.velocityEvents(since: clock.now() - VelocityWindow.week.milliseconds)
        velocity.rebuild(from: history)
        logger.info("velocity rebuilt", [("evaluations", .number(Double(history.count))),
                                         ("subjects", .number(Double(velocity.trackedSubjects))),
                                         ("ms", .number(Double((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)))])
        metrics.collect("insightd_velocity_tracked_subjects", help: "Subjects (accounts, devices, counterparties) velocity tracks.",
                        type: .gauge) { [velocity] in [(labels: [], value: Double(velocity.trackedSubjects))] }

        let authorizations = try SQLiteAuthorizationStore(path: settings.databasePath, writer: writer)
        denials.load(try authorizations.denials())
        metrics.collect("insightd_denials", help: "Subject opt-outs held in memory, by tenant and environment (capped by INSIGHTD_MAX_DENIALS_PER_TENANT).",
                        type: .gauge, labels: ["tenant", "environment"]) { [denials] in
            denials.counts().map { (labels: [$0.tenant, $0.environment.rawValue], value: Double($0.denials)) }
        }
        startRetention(writer: writer)

        let serviceMetrics = ServiceMetrics(registry: metrics)
        let ledger = SQLiteLedger(writer: writer)
        let useCases = UseCases(
            credentials: CredentialCheck(directory: try SQLiteCredentialDirectory(path: settings.databasePath), clock: clock,
                                         cacheSeconds: Double(settings.credentialCacheSeconds)),
            quota: QuotaGate(limiter: limiter, metrics: serviceMetrics),
            evaluation: EvaluationService(ledger: ledger, models: models, hashKeys: hashKeys, clock: clock, limiter: limiter,
                                          denials: denials, velocity: velocity, escalation: escalation, metrics: serviceMetrics,
                                          consumptionGrace: Milliseconds(settings.consumptionGrace) * 1000),
            consumption: ConsumptionService(ledger: ledger, clock: clock, metrics: serviceMetrics),
            labels: LabelService(ledger: ledger, clock: clock, metrics: serviceMetrics),
            authorization: AuthorizationService(store: authorizations, denials: denials, hashKeys: hashKeys, clock: clock,
                                                metrics: serviceMetrics,
                                                cooldown: Milliseconds(settings.authorizationCooldown) * 1000),
            admin: CallerAdminService(administration: administration, limiter: limiter, clock: clock),
            clock: clock)
        let logger = self.logger
        let handler = InsightAPIHandler(APIDependencies(
            useCases: useCases, readiness: readiness, metrics: APIMetrics(registry: metrics),
            onRequest: { summary in
                // Request lines may wait a moment to be written together; 5xx lines never do.
                logger.log(summary.status >= 500 ? .error : .info, "request", deferred: summary.status < 500) { line in
                    line.member("traceId", summary.traceId)
                    line.member("method", summary.method)
                    line.member("route", summary.route)
                    line.member("status", Double(summary.status))
                    line.member("durationMs", (summary.durationSeconds * 1000).rounded())
                    if let code = summary.code { line.member("code", code) }
                    if let caller = summary.callerId { line.member("callerId", caller) }
                }
            }))
        let server = HTTPServer(configuration: settings.httpConfiguration, handler: handler)
        try server.start()
        self.server = server
        metrics.collect("insightd_log_lines_dropped_total", help: "Log lines stderr refused (its reader gone).",
                        type: .counter) { [logger] in [(labels: [], value: Double(logger.droppedLines))] }
        metrics.collect("insightd_open_connections", help: "Open client connections.", type: .gauge) {
            [(labels: [], value: Double(server.openConnections))]
        }
        metrics.collect("insightd_connections_evicted_total",
                        help: "Idle connections closed to make room for a new one (at the connection limit or its address's cap).", type: .counter) {
            [(labels: [], value: Double(server.evictedConnections))]
        }
        metrics.collect("insightd_connections_rejected_total",
                        help: "New connections closed at once: every open one busy (limit), or every one of their address's, at its cap (address).",
                        type: .counter, labels: ["reason"]) {
            [(labels: ["address"], value: Double(server.addressRejectedConnections)),
             (labels: ["limit"], value: Double(server.rejectedConnections))]
        }
        metrics.collect("insightd_tls_handshake_failures_total", help: "TLS handshakes that failed or were refused.",
                        type: .counter) {
            [(labels: [], value: Double(server.tlsHandshakeFailures))]
        }
        readiness.set(true)
        logger.info("insightd ready", [
            ("listen", .string("\(settings.listenHost):\(server.boundPort)")),
            ("stateDir", .string(settings.stateDirectory)),
            ("threads", .number(Double(settings.threads))),
            ("models", .array((models.snapshot?.versions.map { .string($0.version) }) ?? [])),
        ])
    }

    /// The escalation rules: the built-in defaults, or the file named by INSIGHTD_VELOCITY_POLICY.
    func loadEscalationPolicy() throws -> EscalationPolicy {
        guard let path = settings.velocityPolicyFile else { return .defaults }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AppError("cannot read the velocity policy \(path): \(String(cString: strerror(errno)))")
        }
        do { return try EscalationPolicy.parse(Array(data)) } catch {
            throw AppError("velocity policy \(path): \(error)")
        }
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

    /// Recounts consumption reporting, and looks for a rotated hash key file, every
    /// `INSIGHTD_COMPLIANCE_REFRESH` seconds, off the request path and each on its own queue.
    private func startComplianceRefresh() {
        let interval = Double(settings.complianceRefresh)
        jobs.append(PeriodicJob("insightd.compliance", firstAfter: interval, every: interval) { [weak self] in
            self?.refreshComplianceIfDue()
        })
        jobs.append(PeriodicJob("insightd.keyring", firstAfter: interval, every: interval) { [weak self] in
            self?.reloadHashKeysIfChanged()
        })
    }

    /// Purges expired data daily (first a minute after start), batch by batch through the writer.
    private func startRetention(writer: GroupCommitWriter) {
        measuredTime = MeasuredTime(clock: clock)
        jobs.append(PeriodicJob("insightd.retention", firstAfter: 60, every: 86_400) { [weak self] in self?.purgeExpired() })
    }

    /// Deletes what is older than the retention period now, one bounded batch per writer job,
    /// so traffic interleaves with the purge. Calls `completion` with the totals.
    public func purgeExpired(completion: (@Sendable (Retention.Report) -> Void)? = nil) {
        guard let writer else { return }
        let logger = self.logger, denials = self.denials
        let (now, wallAhead) = measuredTime?.now() ?? (clock.now(), 0)
        if wallAhead > 3_600_000 {
            logger.warning("the wall clock is ahead of the time measured since start; retention counts from the measured time",
                           [("aheadSeconds", .number(Double(wallAhead / 1000)))])
        }
        let cutoff = now - Milliseconds(settings.retentionDays) * 86_400_000
        @Sendable func next(_ total: Retention.Report) {
            writer.submit({ db in try Retention.purgeBatch(db, cutoff: cutoff) }) { result in
                switch result {
                case .success(let batch) where !batch.isEmpty:
                    var sum = total
                    sum.add(batch)
                    next(sum)
                case .success:
                    denials.purge(renewedBefore: cutoff)
                    if !total.isEmpty {
                        logger.info("retention purge", [("evaluations", .number(Double(total.evaluations))),
                                                        ("labels", .number(Double(total.labels))),
                                                        ("labelSubmissions", .number(Double(total.labelSubmissions))),
                                                        ("authorizations", .number(Double(total.authorizations)))])
                    }
                    completion?(total)
                case .failure(let failure):
                    logger.error("retention purge failed; retried tomorrow", [("error", .string("\(failure)"))])
                    completion?(total)
                }
            }
        }
        next(Retention.Report())
    }

    /// Loads the TLS certificate, key and client CAs again (SIGHUP), for connections accepted from
    /// now on; false when insightd serves plain HTTP. Throws, changing nothing, when the files
    /// are not usable.
    public func reloadTLS() throws -> Bool {
        try server?.reloadTLS() ?? false
    }

    /// Picks up a rotated keyring: `insightctl hash-keys rotate` rewrites the file, and the
    /// next hashes use the new active key while lookups still try the previous ones.
    public func reloadHashKeysIfChanged() {
        let path = settings.resolvedHashKeyFile
        let fingerprint = KeyringFile.fingerprint(path: path)
        guard fingerprint != keyringFingerprint, let hashKeys else { return }
        do {
            let keyring = try KeyringFile.keyring(path: path, createIfMissing: false, now: clock.now())
            hashKeys.replace(keyring)
            keyringFingerprint = fingerprint
            logger.info("hash keys reloaded", [("activeKeyId", .string(keyring.active.keyId)),
                                               ("previousKeys", .number(Double(keyring.previous.count)))])
        } catch {
            logger.error("cannot reload hash keys; keeping the keys in use", [("error", .string("\(error)"))])
        }
    }

    /// Share of one core the periodic recount may take. The recount reads every evaluation of
    /// the counting window (an hour by default): at 1,000 evaluations per
    /// second that is 3.6 million rows, seconds of work that would otherwise repeat every
    /// `INSIGHTD_COMPLIANCE_REFRESH` seconds.
    static let complianceRecountBudget = 0.05

    /// Seconds until the next recount after one that took `duration`: the configured interval,
    /// or longer when the recount is so costly that it would exceed its budget of one core.
    static func complianceRecountDelay(interval: Int, lastDuration duration: Double) -> Double {
        max(Double(interval), duration / complianceRecountBudget)
    }

    private func refreshComplianceIfDue() {
        let started = DispatchTime.now().uptimeNanoseconds
        guard started >= nextComplianceRecount else { return }
        refreshCompliance()
        let duration = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        complianceRecountSeconds.set(to: duration)
        let delay = Self.complianceRecountDelay(interval: settings.complianceRefresh, lastDuration: duration)
        // A little early, so that a timer tick at the interval is not missed by microseconds.
        nextComplianceRecount = started + UInt64((delay - 0.5) * 1e9)
    }

    /// Reads the reporting counts from the store into the rate limiter now.
    public func refreshCompliance() {
        guard let administration, let limiter else { return }
        do {
            try limiter.refresh(from: administration)
            var overdue: [Environment: Int] = [.production: 0, .sandbox: 0]
            for caller in try administration.everyCaller() {
                overdue[caller.environment, default: 0] += limiter.view(caller).stats.overdue
            }
            for (environment, count) in overdue { overdueReports.set(environment.rawValue, to: Double(count)) }
        } catch {
            logger.error("cannot count consumption reporting", [("error", .string("\(error)"))])
        }
    }

    /// Drains and stops: readiness off, stop accepting, finish in-flight requests, then
    /// commit what is queued and close the store.
    public func stop() {
        for job in jobs { job.stop() }
        jobs = []
        readiness.set(false)
        server?.shutdown(timeout: Double(settings.shutdownTimeout))
        writer?.stop()
        instanceLock = nil
        logger.info("insightd stopped")
    }
}
