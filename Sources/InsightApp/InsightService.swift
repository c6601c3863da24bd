import CoachingModel
import Foundation
import HTTPServer
import InsightAPI
import InsightDomain
import InsightServices
import JSON
import Synchronization
import Telemetry

/// The composition root: `start` builds insightd from its settings — state directory and
/// instance lock, the store's ports (`StoreBackend`), the hash keys, the models, the use cases, the HTTP
/// server and the upkeep jobs — then starts its parts in the order of one list
/// (`ServiceGroup.daemon`); `stop` stops them in reverse, which is the drain. Everything it holds
/// is built before anything starts, so a start that fails leaves nothing running.
public final class InsightService: Sendable {
    public let settings: Settings
    public let logger: Logger
    public let readiness: Readiness
    /// Every metric the daemon exports at `/metrics` (on the metrics listener).
    public let metrics: MetricsRegistry
    /// The identifier hash keys; replaced when the key file changes (a rotation).
    public let hashKeys: HashKeys
    /// The keys that sign the heads of receipts; replaced when their directory changes (a rotation).
    public let signingKeys: SigningKeys
    /// Subjects who switched insights off, indexed in memory.
    public let denials: DenialIndex
    /// The API, also callable in process (the fuzz targets call it so).
    public let handler: InsightAPIHandler
    private let server: HTTPServer
    /// The metrics listener (`INSIGHTD_METRICS_LISTEN`); nil when it is off.
    private let metricsServer: HTTPServer?
    private let recount: ComplianceRecount
    private let keyringWatch: ChangedFileWatch
    private let signingKeyWatch: ChangedFileWatch
    private let retention: RetentionJob
    private let modelLoader: ModelLoader
    private let decisionLoader: DecisionPolicyLoader
    /// Every part that runs between start and stop, in start order.
    private let lifecycle: ServiceGroup
    private let stopped = Atomic<Bool>(false)

    /// Builds and starts insightd; throws with an operator-readable message when something is
    /// wrong (then nothing keeps running).
    public static func start(settings: Settings, clock: any Clock = SystemClock(), logger: Logger? = nil) throws -> InsightService {
        let service = try InsightService(
            settings: settings, clock: clock,
            logger: logger ?? Logger(minimumLevel: settings.logLevel))
        try service.run()
        return service
    }

    private init(settings: Settings, clock: any Clock, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        let metrics = MetricsRegistry()
        self.metrics = metrics
        metrics.gauge("insightd_build_info", help: "Always 1; the labels say which build runs.", labels: ["version"])
            .set(Daemon.version, to: 1)
        ProcessMetrics.register(on: metrics)

        // A TLS key others can read stops the start before anything is created or bound.
        try settings.refuseExposedTLSKey()
        try StoreBackend.createStateDirectory(settings.stateDirectory)
        let instanceLock = try InstanceLock(directory: settings.stateDirectory)
        // The signing keys before the store: a directory without a usable key stops the start
        // before anything touches a (shared) database. Several instances never create a key:
        // each would sign with one the others do not publish.
        let signingDirectory = settings.resolvedSigningKeyDirectory
        let signingKeys = SigningKeys(
            try SigningKeyDirectory.keySet(
                directory: signingDirectory, createIfEmpty: !settings.isShared,
                now: clock.now()), clock: clock)
        self.signingKeys = signingKeys
        signingKeyWatch = SigningKeyWatch.watch(
            signingKeys, directory: signingDirectory, interval: settings.complianceRefresh,
            clock: clock, logger: logger)
        // The answers this instance commits are proven by its own chain of heads.
        let receipts = ReceiptIssuer(
            instance: try InstanceIdentity.load(stateDirectory: settings.stateDirectory),
            keys: signingKeys, clock: clock)
        let backend = try StoreBackend(settings: settings, now: clock.now(), receipts: receipts, metrics: metrics, logger: logger)
        let ports = backend.ports

        let keyPath = settings.resolvedHashKeyFile
        let hashKeys = HashKeys(
            try KeyringFile.keyring(
                path: keyPath, createIfMissing: settings.hashKeyFile == nil,
                now: clock.now()))
        self.hashKeys = hashKeys
        try KeyringWatch.register(hashKeys.current, in: ports.hashKeyRegistry, now: clock.now())
        keyringWatch = KeyringWatch.watch(
            hashKeys, registry: ports.hashKeyRegistry, path: keyPath,
            interval: settings.complianceRefresh, clock: clock, logger: logger)

        let models = InsightModels(nil)
        modelLoader = ModelLoader(
            models: models, directory: settings.modelsDirectory,
            explicit: settings.modelsDirectoryExplicit, current: settings.currentModel,
            shadow: settings.shadowModels, logger: logger)
        try modelLoader.reload()

        let administration = ports.administration, authorizations = ports.authorizations
        // What lives in memory is read from the store, so it survives a restart: reporting counts
        // (penalties) and opt-outs before traffic; velocity counters (the last 7 days, the
        // embedded mode) are replayed beside traffic, escalation by velocity waiting for them
        // (VelocityRebuild). With Redis, the shared state is there already.
        let shared = try SharedState(
            settings: settings, history: administration, leadership: ports.leadership, clock: clock,
            metrics: metrics, logger: logger)
        let limiter = shared.limiter
        try limiter.refresh(from: administration)
        recount = ComplianceRecount(
            limiter: limiter, source: administration, leadership: ports.leadership,
            callers: { try administration.everyCaller() },
            interval: settings.complianceRefresh, logger: logger, metrics: metrics)
        let escalation = try Self.escalationPolicy(settings)
        let decisions = DecisionPolicies()
        decisionLoader = DecisionPolicyLoader(
            policies: decisions, file: settings.decisionPolicyFile,
            shadowFile: settings.decisionPolicyShadowFile, logger: logger)
        try decisionLoader.reload()
        let tracker = shared.tracker
        let velocityRebuild = try tracker.map { try VelocityRebuild(history: administration, velocity: $0, clock: clock, logger: logger) }
        velocityRebuild?.register(on: metrics)
        let storeOfRecord = ports.store
        readiness = Readiness(storeReachable: { storeOfRecord.isReachable }, velocityRebuilding: { tracker?.isRebuilding ?? false })
        let denials = DenialIndex(capacity: settings.maxDenialsPerTenant)
        self.denials = denials
        let denialsLoadedAt = clock.now()
        denials.load(try authorizations.denials())
        // Several instances on one store: whether it answers, and the opt-outs the others recorded.
        let storeWatch =
            settings.isShared
            ? StoreWatch(
                isReachable: { storeOfRecord.isReachable },
                unreachableReason: { storeOfRecord.unreachableReason },
                metrics: metrics, logger: logger) : nil
        let denialSync =
            settings.isShared
            ? DenialSync(
                store: authorizations, denials: denials, loadedAt: denialsLoadedAt,
                interval: settings.complianceRefresh, clock: clock, logger: logger) : nil
        retention = RetentionJob(
            store: ports.retention, leadership: ports.leadership, denials: denials,
            retentionDays: settings.retentionDays, trainingCaptureDays: settings.trainingCaptureDays,
            clock: clock, logger: logger)

        let useCases = Self.useCases(
            settings: settings, ports: ports, shared: shared, models: models, hashKeys: hashKeys,
            denials: denials, decisions: decisions, escalation: escalation, metrics: metrics,
            clock: clock, logger: logger)
        handler = InsightAPIHandler(
            APIDependencies(
                useCases: useCases, readiness: readiness, metrics: APIMetrics(registry: metrics), signingKeys: signingKeys,
                onRequest: { logger.request($0) }))
        let server = HTTPServer(configuration: settings.httpConfiguration, handler: handler)
        self.server = server
        let metricsServer = settings.metricsHTTPConfiguration.map {
            HTTPServer(configuration: $0, handler: MetricsHandler(registry: metrics))
        }
        self.metricsServer = metricsServer
        lifecycle = .daemon(
            instanceLock: instanceLock, store: backend, sharedState: shared,
            upkeep: [
                recount.periodicJob(), keyringWatch.periodicJob(), signingKeyWatch.periodicJob(), retention.periodicJob(),
                denialSync?.periodicJob(), storeWatch?.periodicJob()
            ],
            metricsListener: metricsServer.map {
                Listener(server: $0, drainTimeout: 1, name: "metrics listener (INSIGHTD_METRICS_LISTEN)")
            },
            apiListener: Listener(server: server, drainTimeout: Double(settings.shutdownTimeout)),
            readiness: readiness, velocityRebuild: velocityRebuild)
        registerGauges(models: models, tracker: tracker)
    }

    /// Each use case over the ports, the shared state, the models and keys it needs, with its
    /// metrics and log lines.
    private static func useCases(
        settings: Settings, ports: StorePorts, shared: SharedState, models: InsightModels,
        hashKeys: HashKeys, denials: DenialIndex, decisions: DecisionPolicies,
        escalation: EscalationPolicy, metrics: MetricsRegistry, clock: any Clock,
        logger: Logger
    ) -> UseCases {
        let limiter = shared.limiter, administration = ports.administration, authorizations = ports.authorizations
        let serviceMetrics = ServiceMetrics(registry: metrics)
        let drift = ScoreDrift(models: models, clock: clock) { version, category, source, stability in
            logger.scoreDrift(version: version, category: category, source: source, stability: stability)
        }
        metrics.collect(
            "insightd_model_score_psi",
            help:
                "Population stability index of each model version's scores (served and shadow) per category against its manifest's reference, over this instance's last full hour and the current one, once they hold 500 scores; 0.1 moderate, 0.2 a shift.",
            type: .gauge, labels: ["version", "category"]
        ) { drift.samples() }
        metrics.collect(
            "insightd_model_score_source_psi",
            help:
                "The same index over the evaluations of one capture kit (interaction.source: platform, kit, kit version), so that a kit version that moves the scores shows; at most 24 kits by name, the others as kit and kit_version other.",
            type: .gauge, labels: ["version", "category", "platform", "kit", "kit_version"]
        ) { drift.sourceSamples() }
        let ledger = ports.ledger
        let authorization = AuthorizationService(
            store: authorizations, denials: denials, hashKeys: hashKeys, clock: clock,
            metrics: serviceMetrics,
            cooldown: Milliseconds(settings.authorizationCooldown) * 1000)
        var useCases = UseCases(
            credentials: CredentialCheck(
                directory: ports.credentials, clock: clock,
                cacheSeconds: Double(settings.credentialCacheSeconds)),
            quota: QuotaGate(limiter: limiter, metrics: serviceMetrics),
            evaluation: EvaluationService(
                ledger: ledger, models: models, hashKeys: hashKeys, clock: clock, limiter: limiter,
                denials: denials, velocity: shared.velocity, escalation: escalation, metrics: serviceMetrics,
                consumptionGrace: Milliseconds(settings.consumptionGrace) * 1000,
                decisions: decisions, gate: shared.gate, drift: drift),
            consumption: ConsumptionService(ledger: ledger, clock: clock, metrics: serviceMetrics),
            labels: LabelService(ledger: ledger, clock: clock, metrics: serviceMetrics),
            authorization: authorization,
            admin: CallerAdminService(administration: administration, limiter: limiter, clock: clock),
            subjects: SubjectService(
                history: ports.history, erasure: ports.erasure, authorization: authorization,
                denials: denials, velocity: shared.velocity, hashKeys: hashKeys, metrics: serviceMetrics,
                audit: { logger.subjectErased($0) }),
            performance: ModelPerformanceService(
                source: ports.performance, clock: clock,
                maturityDays: settings.labelMaturityDays, models: models),
            clock: clock)
        useCases.decisionReports = DecisionReportService(source: ports.decisions, administration: administration, clock: clock)
        useCases.receipts = ReceiptLogService(log: ports.receiptLog)
        useCases.interventions = InterventionCatalogService(catalog: ports.interventions, clock: clock)
        return useCases
    }

    /// The gauges read when `/metrics` is scraped.
    private func registerGauges(models: InsightModels, tracker: VelocityTracker?) {
        let denials = self.denials, logger = self.logger
        let server = self.server
        if let tracker {
            metrics.collect(
                "insightd_velocity_tracked_subjects", help: "Subjects (accounts, devices, counterparties) velocity tracks.",
                type: .gauge
            ) { [(labels: [], value: Double(tracker.trackedSubjects))] }
        }
        metrics.collect(
            "insightd_denials",
            help: "Subject opt-outs held in memory, by tenant and environment (capped by INSIGHTD_MAX_DENIALS_PER_TENANT).",
            type: .gauge, labels: ["tenant", "environment"]
        ) {
            denials.counts().map { (labels: [$0.tenant, $0.environment.rawValue], value: Double($0.denials)) }
        }
        metrics.collect(
            "insightd_log_lines_dropped_total", help: "Log lines stderr refused (its reader gone).",
            type: .counter
        ) { [(labels: [], value: Double(logger.droppedLines))] }
        metrics.collect("insightd_open_connections", help: "Open client connections.", type: .gauge) {
            [(labels: [], value: Double(server.openConnections))]
        }
        metrics.collect(
            "insightd_connections_evicted_total",
            help:
                "Connections closed to make room for a new one (at the connection limit or its address's cap): idle, or receiving a request (incomplete).",
            type: .counter, labels: ["reason"]
        ) {
            let incomplete = server.evictedIncompleteConnections
            return [
                (labels: ["idle"], value: Double(max(0, server.evictedConnections - incomplete))),
                (labels: ["incomplete"], value: Double(incomplete))
            ]
        }
        metrics.collect(
            "insightd_connections_rejected_total",
            help: "New connections closed at once: every open one busy (limit), or every one of their address's, at its cap (address).",
            type: .counter, labels: ["reason"]
        ) {
            [
                (labels: ["address"], value: Double(server.addressRejectedConnections)),
                (labels: ["limit"], value: Double(server.rejectedConnections))
            ]
        }
        metrics.collect(
            "insightd_tls_handshake_failures_total", help: "TLS handshakes that failed or were refused.",
            type: .counter
        ) {
            [(labels: [], value: Double(server.tlsHandshakeFailures))]
        }
    }

    /// Starts every part in order (`ServiceGroup.daemon`); a part that fails to start stops those
    /// started before it.
    private func run() throws {
        do { try lifecycle.start() } catch {
            stop()
            throw error
        }
        var metricsListen: JSONValue = .string("off")
        if let address = settings.metricsListen, let port = metricsPort { metricsListen = .string("\(address.host):\(port)") }
        logger.info(
            "insightd ready",
            [
                ("listen", .string("\(settings.listenHost):\(server.boundPort)")),
                ("metricsListen", metricsListen),
                ("stateDir", .string(settings.stateDirectory)),
                ("threads", .number(Double(settings.threads))),
                ("models", .array((modelLoader.models.snapshot?.versions.map { .string($0.version) }) ?? []))
            ])
    }

    /// The port the server listens on (useful with port 0).
    public var boundPort: Int { server.boundPort }

    /// The port the metrics listener listens on; nil when it is off.
    public var metricsPort: Int? { metricsServer?.boundPort }

    /// The escalation rules: the built-in defaults, or the file named by INSIGHTD_VELOCITY_POLICY.
    static func escalationPolicy(_ settings: Settings) throws -> EscalationPolicy {
        guard let path = settings.velocityPolicyFile else { return .defaults }
        // A policy is a few hundred bytes: refuse a file that is not one before reading it whole.
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > DecisionPolicy.maxBytes {
            throw AppError("velocity policy \(path): larger than \(DecisionPolicy.maxBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AppError("cannot read the velocity policy \(path): \(String(cString: strerror(errno)))")
        }
        do { return try EscalationPolicy.parse(Array(data)) } catch {
            throw AppError("velocity policy \(path): \(error)")
        }
    }

    /// Loads the models again (SIGHUP); throws, keeping the models in use, when they are not usable.
    public func reloadModels() throws { try modelLoader.reload() }

    /// Loads the decision policy and its shadow again (SIGHUP); throws, keeping the policies in
    /// use, when a file is not usable.
    public func reloadDecisionPolicies() throws { try decisionLoader.reload() }

    /// Loads the TLS certificate, key and client CAs again (SIGHUP), for connections accepted from
    /// now on; false when insightd serves plain HTTP. Throws, changing nothing, when the files
    /// are not usable or the key has become readable by others (`Settings.refuseExposedTLSKey`).
    public func reloadTLS() throws -> Bool {
        try settings.refuseExposedTLSKey()
        return try server.reloadTLS()
    }

    /// Looks for a rotated hash key file now (the keyring job does so on its schedule).
    public func reloadHashKeysIfChanged() { keyringWatch.reloadIfChanged() }

    /// Looks for rotated or retired signing keys now (their job does so on its schedule).
    public func reloadSigningKeysIfChanged() { signingKeyWatch.reloadIfChanged() }

    /// Reads the reporting counts from the store into the rate limiter now.
    public func refreshCompliance() { recount.recount() }

    /// Deletes what is older than the retention period now; `completion` gets the totals.
    public func purgeExpired(completion: (@Sendable (RetentionReport) -> Void)? = nil) {
        retention.purge(completion: completion)
    }

    /// Drains and stops every part in reverse start order (`ServiceGroup.daemon`): readiness
    /// off, stop accepting, finish in-flight requests, then commit what is queued and close the
    /// store. Only the first call does anything.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        lifecycle.stop()
        logger.info("insightd stopped")
    }
}
