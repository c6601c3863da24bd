import Foundation
import CoachingModel
import HTTPServer
import InsightDomain
import PostgresClient
import RedisClient

/// Every setting of insightd, read from `INSIGHTD_*` environment variables. Durations are
/// whole seconds throughout. `load` collects every problem rather than stopping at the first,
/// so `insightd --check-config` can list them all.
public struct Settings: Sendable, Equatable {
    public var listenHost = "127.0.0.1"
    public var listenPort = 8080
    /// Where `/metrics` is served (`INSIGHTD_METRICS_LISTEN`), apart from the API: its series
    /// name tenants, so only the scraper may reach it. nil: not served (`off`).
    public var metricsListen: ListenAddress? = ListenAddress(host: "127.0.0.1", port: 9464)
    public var stateDirectory = "/var/lib/insightd"
    public var hashKeyFile: String?
    /// The directory of the keys that sign the heads of receipts; nil: `signing-keys` in the state directory.
    public var signingKeyDirectory: String?
    /// Seconds a retired signing key stays published (read by `insightctl signing-keys retire`).
    public var signingKeyRetention = 2_592_000
    public var modelsDirectory = "models"
    /// True when the models directory was set explicitly (then it must exist).
    public var modelsDirectoryExplicit = false
    public var currentModel: String?
    /// `INSIGHTD_MODEL_SHADOW`: model versions scored beside every coaching insight, stored and
    /// reported, never answered (docs/operations.md "Shadow versions").
    public var shadowModels: [String] = []
    public var threads = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 64))
    public var logLevel = LogLevel.info
    public var consumptionGrace = 900
    public var maxBodyBytes = 1 << 20
    public var maxHeaderBytes = 16 << 10
    public var maxConnections = 1024
    public var maxConnectionsPerAddress = 64
    public var headerTimeout = 5
    public var requestTimeout = 10
    public var idleTimeout = 60
    public var writeTimeout = 10
    public var writeQueueCapacity = 10_000
    public var commitBatch = 256
    public var shutdownTimeout = 20
    public var credentialCacheSeconds = 2
    public var reportingWindow = 3600
    public var overdueAllowancePercent = 2
    public var overdueAllowanceMinimum = 20
    public var penaltyFloorPercent = 10
    public var penaltyRecovery = 60
    public var devicePerHour = 120
    public var insightQuotaPercent = 200
    public var complianceRefresh = 5
    public var authorizationCooldown = 259_200
    public var retentionDays = 400
    /// How long fraud labels take to arrive, in days: the model performance report counts the
    /// evaluations older than this as mature (docs/api.md "GET /admin/v1/model-performance").
    public var labelMaturityDays = 60
    /// Days a captured training vector is kept (docs/privacy.md, "Training capture"); at most
    /// `retentionDays`, since a vector is deleted with its evaluation anyway.
    public var trainingCaptureDays = 180
    public var maxDenialsPerTenant = 1_000_000
    public var tlsCertificate: String?
    public var tlsPrivateKey: String?
    public var tlsClientCA: String?
    public var velocityPolicyFile: String?
    /// The decision policy file (docs/decisions.md); nil: the built-in `default-1`.
    public var decisionPolicyFile: String?
    /// A decision policy evaluated beside the one in force and only counted; nil: none.
    public var decisionPolicyShadowFile: String?
    /// The shared store of several instances (a libpq connection URI); nil: SQLite in the state
    /// directory. Holds a password: never logged or echoed whole (`redactedURL`).
    public var databaseURL: String?
    /// The shared rate limits and velocity of several instances; required with `databaseURL`.
    public var redisURL: String?
    /// Instances expected to share the engines: while Redis is unreachable each enforces this
    /// share (1/N) of every caller's rate and burst.
    public var instances = 3

    /// Loop threads by default with shared engines: two per CPU. No loop waits for Redis or for
    /// a write (their calls go through threads of their own), but a loop still waits for a read
    /// of PostgreSQL (a credential cache miss, a report), and a second loop per core keeps the
    /// core busy meanwhile; more than two only add switches (docs/performance.md, "Several
    /// instances on PostgreSQL and Redis").
    static var sharedModeThreads: Int { min(64, 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// True when several instances share PostgreSQL and Redis (docs/deployment.md "Scaling out").
    public var isShared: Bool { databaseURL != nil }

    /// The database file inside the state directory.
    public var databasePath: String { Self.databasePath(stateDirectory: stateDirectory) }

    /// The database in a state directory.
    public static func databasePath(stateDirectory: String) -> String {
        (stateDirectory as NSString).appendingPathComponent("insightd.db")
    }
    /// Where the hash key is read from (and created if missing, when it is the default).
    public var resolvedHashKeyFile: String {
        hashKeyFile ?? (stateDirectory as NSString).appendingPathComponent("hash.key")
    }

    /// Where the keys that sign the heads of receipts are read from (a first key is created there when the
    /// directory holds none, in the embedded mode).
    public var resolvedSigningKeyDirectory: String {
        signingKeyDirectory ?? (stateDirectory as NSString).appendingPathComponent("signing-keys")
    }

    public init() {}

    /// One environment variable: its name, meaning and default, for the docs and `--help`.
    public struct Variable: Sendable {
        public let name: String
        public let meaning: String
        public let defaultValue: String
    }

    /// All variables insightd reads.
    public static let variables: [Variable] = [
        Variable(name: "INSIGHTD_LISTEN", meaning: "host:port to listen on (port 0: any free port)", defaultValue: "127.0.0.1:8080"),
        Variable(
            name: "INSIGHTD_METRICS_LISTEN",
            meaning:
                "host:port of the Prometheus metrics listener, apart from the API (its series name tenants: let only the scraper reach it; port 0: any free port), or off",
            defaultValue: "127.0.0.1:9464"),
        Variable(
            name: "INSIGHTD_STATE_DIR", meaning: "directory of the SQLite database and the generated hash key; created if missing",
            defaultValue: "/var/lib/insightd"),
        Variable(
            name: "INSIGHTD_HASH_KEY_FILE",
            meaning: "file holding the identifier hash key (32+ bytes); generated with mode 0600 when it is the default and missing",
            defaultValue: "$INSIGHTD_STATE_DIR/hash.key"),
        Variable(
            name: "INSIGHTD_SIGNING_KEY_DIR",
            meaning:
                "directory of the Ed25519 keys that sign receipts' heads (one 0600 file per key, managed by insightctl signing-keys); in the embedded mode a first key is created when it holds none",
            defaultValue: "$INSIGHTD_STATE_DIR/signing-keys"),
        Variable(
            name: "INSIGHTD_SIGNING_KEY_RETENTION",
            meaning: "seconds a signing key retired by insightctl signing-keys retire stays published for verification (0-315360000)",
            defaultValue: "2592000 (30 days)"),
        Variable(
            name: "INSIGHTD_MODELS_DIR", meaning: "directory of model versions; when unset and missing, insights answer insightUnavailable",
            defaultValue: "models"),
        Variable(
            name: "INSIGHTD_MODEL_CURRENT", meaning: "model version to serve as current", defaultValue: "as the models directory says"),
        Variable(
            name: "INSIGHTD_MODEL_SHADOW",
            meaning:
                "comma-separated model versions (at most 4) scored beside every coaching insight, stored and reported in /admin/v1/model-performance, never answered; each must exist, not be withdrawn and not be current; checked again on SIGHUP",
            defaultValue: "unset (no shadow)"),
        Variable(
            name: "INSIGHTD_THREADS", meaning: "HTTP loop threads (1-64)",
            defaultValue: "number of CPUs; 2 per CPU (at most 64) with INSIGHTD_DATABASE_URL"),
        Variable(name: "INSIGHTD_LOG_LEVEL", meaning: "debug, info, warning or error", defaultValue: "info"),
        Variable(
            name: "INSIGHTD_CONSUMPTION_GRACE", meaning: "seconds a caller has to report consumption (60-604800)", defaultValue: "900"),
        Variable(name: "INSIGHTD_MAX_BODY_BYTES", meaning: "largest request body (1024-16777216)", defaultValue: "1048576"),
        Variable(name: "INSIGHTD_MAX_HEADER_BYTES", meaning: "largest request header section (1024-1048576)", defaultValue: "16384"),
        Variable(
            name: "INSIGHTD_MAX_CONNECTIONS",
            meaning:
                "open connections at most; at the limit the longest idle one (or one still sending its request) makes room for a new one (1-100000)",
            defaultValue: "1024"),
        Variable(
            name: "INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS",
            meaning:
                "open connections at most from one IPv4 address or IPv6 /64, loopback included; at the cap one of the address's idle ones (or one still sending its request) makes room; behind a proxy raise it or set 0 (no cap) (0-100000)",
            defaultValue: "64"),
        Variable(
            name: "INSIGHTD_HEADER_TIMEOUT",
            meaning: "seconds for a request's head to arrive from its first byte, and a connection's first from its opening (1-300)",
            defaultValue: "5"),
        Variable(
            name: "INSIGHTD_REQUEST_TIMEOUT",
            meaning: "seconds for a request's body to arrive after its head, and for a TLS handshake (1-300)", defaultValue: "10"),
        Variable(
            name: "INSIGHTD_IDLE_TIMEOUT", meaning: "seconds a keep-alive connection stays open between requests (1-3600)",
            defaultValue: "60"),
        Variable(name: "INSIGHTD_WRITE_TIMEOUT", meaning: "seconds for a response to drain to the client (1-300)", defaultValue: "10"),
        Variable(name: "INSIGHTD_WRITE_QUEUE", meaning: "writes waiting for commit before 503 (1-1000000)", defaultValue: "10000"),
        Variable(name: "INSIGHTD_COMMIT_BATCH", meaning: "writes committed together at most (1-10000)", defaultValue: "256"),
        Variable(name: "INSIGHTD_SHUTDOWN_TIMEOUT", meaning: "seconds SIGTERM waits for in-flight requests (1-600)", defaultValue: "20"),
        Variable(
            name: "INSIGHTD_CREDENTIAL_CACHE", meaning: "seconds a key lookup is reused; new and revoked keys take effect within it (0-60)",
            defaultValue: "2"),
        Variable(
            name: "INSIGHTD_REPORTING_WINDOW", meaning: "seconds of evaluations over which consumption reporting is counted (60-604800)",
            defaultValue: "3600"),
        Variable(
            name: "INSIGHTD_OVERDUE_ALLOWANCE_PERCENT",
            meaning: "overdue reports tolerated, as a percentage of the window's evaluations (0-100)", defaultValue: "2"),
        Variable(name: "INSIGHTD_OVERDUE_ALLOWANCE_MIN", meaning: "overdue reports always tolerated (0-1000000)", defaultValue: "20"),
        Variable(
            name: "INSIGHTD_PENALTY_FLOOR_PERCENT", meaning: "lowest percentage of a caller's rate a reporting penalty leaves (1-100)",
            defaultValue: "10"),
        Variable(
            name: "INSIGHTD_PENALTY_RECOVERY", meaning: "seconds between two steps of recovery from a penalty (1-3600)", defaultValue: "60"),
        Variable(
            name: "INSIGHTD_DEVICE_LIMIT_PER_HOUR", meaning: "evaluations allowed per device per hour (1-1000000)", defaultValue: "120"),
        Variable(
            name: "INSIGHTD_INSIGHT_QUOTA_PERCENT",
            meaning: "each insight type's quota as a percentage of the caller's rate and burst (1-10000)", defaultValue: "200"),
        Variable(
            name: "INSIGHTD_AUTHORIZATION_COOLDOWN", meaning: "seconds before a subject's denial takes effect (0-2592000)",
            defaultValue: "259200"),
        Variable(
            name: "INSIGHTD_RETENTION_DAYS",
            meaning: "days evaluations, reports, labels and opt-outs not renewed are kept; purged daily (1-3650)", defaultValue: "400"),
        Variable(
            name: "INSIGHTD_LABEL_MATURITY_DAYS",
            meaning: "days fraud labels take to arrive: the model performance report counts evaluations older than this as mature (0-3650)",
            defaultValue: "60"),
        Variable(
            name: "INSIGHTD_TRAINING_CAPTURE_DAYS",
            meaning:
                "days the feature vectors of callers with training capture on are kept for insightctl training export; purged daily with retention (1-3650, at most INSIGHTD_RETENTION_DAYS)",
            defaultValue: "180"),
        Variable(
            name: "INSIGHTD_MAX_DENIALS_PER_TENANT",
            meaning:
                "subject opt-outs one tenant and environment may hold (each is kept in memory); past it a new denial answers 429 (1-100000000)",
            defaultValue: "1000000"),
        Variable(
            name: "INSIGHTD_TLS_CERT", meaning: "PEM certificate chain; with INSIGHTD_TLS_KEY the port speaks only HTTPS (TLS 1.2+)",
            defaultValue: "unset (plain HTTP)"),
        Variable(name: "INSIGHTD_TLS_KEY", meaning: "PEM private key (unencrypted) of INSIGHTD_TLS_CERT", defaultValue: "unset"),
        Variable(
            name: "INSIGHTD_TLS_CLIENT_CA", meaning: "PEM CA bundle; when set, clients must present a certificate it verifies",
            defaultValue: "unset"),
        Variable(
            name: "INSIGHTD_VELOCITY_POLICY", meaning: "JSON file of velocity escalation rules (docs/velocity.md), read at start",
            defaultValue: "built-in defaults"),
        Variable(
            name: "INSIGHTD_DECISION_POLICY",
            meaning: "decision policy file, one JSON object a line (docs/decisions.md); read at start and on SIGHUP",
            defaultValue: "built-in default-1"),
        Variable(
            name: "INSIGHTD_DECISION_POLICY_SHADOW",
            meaning:
                "decision policy file evaluated beside the one in force, its disagreements counted in /metrics, never answered; read at start and on SIGHUP",
            defaultValue: "unset (no shadow)"),
        Variable(
            name: "INSIGHTD_DATABASE_URL",
            meaning:
                "postgres://user:password@host:port/db?sslmode=… (PostgreSQL 15+), or several hosts (postgres://…@h1:5432,h2:5432/db?…) to follow the primary through a failover: the store shared by several instances instead of SQLite in the state directory; needs INSIGHTD_REDIS_URL, INSIGHTD_HASH_KEY_FILE and INSIGHTD_SIGNING_KEY_DIR; percent-encode the password's reserved characters (@ as %40, / as %2F, ...)",
            defaultValue: "unset (SQLite)"),
        Variable(
            name: "INSIGHTD_REDIS_URL",
            meaning:
                "redis://[:password@]host:port[/db] (Redis 7), or redis-sentinel://[:password@]host1:26379,host2:26379,…/MASTER[?sentinel_password=…] to follow the master Redis Sentinel names through failovers: rate limits and velocity shared by the instances; only with INSIGHTD_DATABASE_URL",
            defaultValue: "unset"),
        Variable(
            name: "INSIGHTD_INSTANCES",
            meaning: "instances sharing the engines; while Redis is unreachable each enforces 1/N of every quota (1-1000)",
            defaultValue: "3"),
        Variable(
            name: "INSIGHTD_COMPLIANCE_REFRESH",
            meaning:
                "seconds between recounts of consumption reporting from the store, and between looks for a rotated hash key file (1-300)",
            defaultValue: "5")
    ]

    /// Reads settings from `environment`, returning every problem found.
    public static func load(from environment: [String: String]) -> Result<Settings, SettingsError> {
        var s = Settings()
        var problems: [String] = []
        let known = Set(variables.map(\.name))
        for name in environment.keys.sorted() where name.hasPrefix("INSIGHTD_") && !known.contains(name) {
            problems.append("\(name): not a setting of insightd (misspelt?)")
        }
        func int(_ name: String, _ range: ClosedRange<Int>, _ target: inout Int) {
            guard let text = environment[name] else { return }
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
                problems.append("\(name)=\(text): must be a whole number from \(range.lowerBound) to \(range.upperBound)")
                return
            }
            target = value
        }
        if let listen = environment["INSIGHTD_LISTEN"] {
            if let (host, port) = parseListen(listen) {
                s.listenHost = host
                s.listenPort = port
            } else {
                problems.append(
                    "INSIGHTD_LISTEN=\(listen): must be host:port with a port from 0 to 65535, e.g. 127.0.0.1:8080 or [::1]:8080")
            }
        }
        if let listen = environment["INSIGHTD_METRICS_LISTEN"] {
            if listen == "off" {
                s.metricsListen = nil
            } else if let (host, port) = parseListen(listen) {
                s.metricsListen = ListenAddress(host: host, port: port)
            } else {
                problems.append(
                    "INSIGHTD_METRICS_LISTEN=\(listen): must be host:port with a port from 0 to 65535, e.g. 127.0.0.1:9464, or off")
            }
        }
        if let metrics = s.metricsListen, metrics.port != 0, metrics.port == s.listenPort,
            metrics.host == s.listenHost || [metrics.host, s.listenHost].contains(where: { ["0.0.0.0", "::"].contains($0) })
        {
            problems.append("INSIGHTD_METRICS_LISTEN: must not be the API's port (INSIGHTD_LISTEN): the metrics are served apart from it")
        }
        if let dir = environment["INSIGHTD_STATE_DIR"] {
            if dir.isEmpty { problems.append("INSIGHTD_STATE_DIR: must not be empty") } else { s.stateDirectory = dir }
        }
        if let file = environment["INSIGHTD_HASH_KEY_FILE"] {
            if file.isEmpty { problems.append("INSIGHTD_HASH_KEY_FILE: must not be empty") } else { s.hashKeyFile = file }
        }
        if let dir = environment["INSIGHTD_SIGNING_KEY_DIR"] {
            if dir.isEmpty { problems.append("INSIGHTD_SIGNING_KEY_DIR: must not be empty") } else { s.signingKeyDirectory = dir }
        }
        int("INSIGHTD_SIGNING_KEY_RETENTION", 0...315_360_000, &s.signingKeyRetention)
        if let dir = environment["INSIGHTD_MODELS_DIR"] {
            if dir.isEmpty {
                problems.append("INSIGHTD_MODELS_DIR: must not be empty")
            } else {
                s.modelsDirectory = dir
                s.modelsDirectoryExplicit = true
            }
        }
        if let current = environment["INSIGHTD_MODEL_CURRENT"], !current.isEmpty { s.currentModel = current }
        if let shadow = environment["INSIGHTD_MODEL_SHADOW"], !shadow.isEmpty {
            let versions = shadow.split(separator: ",", omittingEmptySubsequences: false)
                .map { String($0).trimmingCharacters(in: .whitespaces) }
            if versions.contains(where: { !ModelRegistry.isVersion($0) }) {
                problems.append("INSIGHTD_MODEL_SHADOW: must be model versions (digits separated by dots) separated by commas")
            } else if versions.count > ModelRegistry.maxShadows {
                problems.append("INSIGHTD_MODEL_SHADOW: at most \(ModelRegistry.maxShadows) shadow versions")
            } else if Set(versions).count != versions.count {
                problems.append("INSIGHTD_MODEL_SHADOW: names a version twice")
            } else {
                s.shadowModels = versions
            }
        }
        int("INSIGHTD_THREADS", 1...64, &s.threads)
        if let level = environment["INSIGHTD_LOG_LEVEL"] {
            if let parsed = LogLevel(rawValue: level.lowercased()) {
                s.logLevel = parsed
            } else {
                problems.append("INSIGHTD_LOG_LEVEL=\(level): must be one of debug, info, warning, error")
            }
        }
        int("INSIGHTD_CONSUMPTION_GRACE", 60...604_800, &s.consumptionGrace)
        int("INSIGHTD_MAX_BODY_BYTES", 1024...16_777_216, &s.maxBodyBytes)
        int("INSIGHTD_MAX_HEADER_BYTES", 1024...1_048_576, &s.maxHeaderBytes)
        int("INSIGHTD_MAX_CONNECTIONS", 1...100_000, &s.maxConnections)
        int("INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS", 0...100_000, &s.maxConnectionsPerAddress)
        int("INSIGHTD_HEADER_TIMEOUT", 1...300, &s.headerTimeout)
        int("INSIGHTD_REQUEST_TIMEOUT", 1...300, &s.requestTimeout)
        int("INSIGHTD_IDLE_TIMEOUT", 1...3600, &s.idleTimeout)
        int("INSIGHTD_WRITE_TIMEOUT", 1...300, &s.writeTimeout)
        int("INSIGHTD_WRITE_QUEUE", 1...1_000_000, &s.writeQueueCapacity)
        int("INSIGHTD_COMMIT_BATCH", 1...10_000, &s.commitBatch)
        int("INSIGHTD_SHUTDOWN_TIMEOUT", 1...600, &s.shutdownTimeout)
        int("INSIGHTD_CREDENTIAL_CACHE", 0...60, &s.credentialCacheSeconds)
        int("INSIGHTD_REPORTING_WINDOW", 60...604_800, &s.reportingWindow)
        int("INSIGHTD_OVERDUE_ALLOWANCE_PERCENT", 0...100, &s.overdueAllowancePercent)
        int("INSIGHTD_OVERDUE_ALLOWANCE_MIN", 0...1_000_000, &s.overdueAllowanceMinimum)
        int("INSIGHTD_PENALTY_FLOOR_PERCENT", 1...100, &s.penaltyFloorPercent)
        int("INSIGHTD_PENALTY_RECOVERY", 1...3600, &s.penaltyRecovery)
        int("INSIGHTD_DEVICE_LIMIT_PER_HOUR", 1...1_000_000, &s.devicePerHour)
        int("INSIGHTD_INSIGHT_QUOTA_PERCENT", 1...10_000, &s.insightQuotaPercent)
        int("INSIGHTD_COMPLIANCE_REFRESH", 1...300, &s.complianceRefresh)
        int("INSIGHTD_AUTHORIZATION_COOLDOWN", 0...2_592_000, &s.authorizationCooldown)
        int("INSIGHTD_RETENTION_DAYS", 1...3650, &s.retentionDays)
        int("INSIGHTD_LABEL_MATURITY_DAYS", 0...3650, &s.labelMaturityDays)
        int("INSIGHTD_TRAINING_CAPTURE_DAYS", 1...3650, &s.trainingCaptureDays)
        if s.trainingCaptureDays > s.retentionDays {
            // The default (180) gives way to a shorter retention; an explicit longer period is a mistake.
            if environment["INSIGHTD_TRAINING_CAPTURE_DAYS"] == nil {
                s.trainingCaptureDays = s.retentionDays
            } else {
                problems.append(
                    "INSIGHTD_TRAINING_CAPTURE_DAYS=\(s.trainingCaptureDays): must be at most INSIGHTD_RETENTION_DAYS (\(s.retentionDays)): a vector goes with its evaluation"
                )
            }
        }
        // A retry entry lives one grace and names a receipt head, which retention keeps for the
        // retention period: the head must outlive the entry (docs/api.md, "Retries").
        if s.consumptionGrace > s.retentionDays * 86_400 {
            problems.append(
                "INSIGHTD_CONSUMPTION_GRACE=\(s.consumptionGrace): must be at most INSIGHTD_RETENTION_DAYS (\(s.retentionDays)) in seconds: a retry is answered with a receipt head retention keeps"
            )
        }
        int("INSIGHTD_MAX_DENIALS_PER_TENANT", 1...100_000_000, &s.maxDenialsPerTenant)
        for (name, target) in [
            ("INSIGHTD_TLS_CERT", \Settings.tlsCertificate), ("INSIGHTD_TLS_KEY", \Settings.tlsPrivateKey),
            ("INSIGHTD_TLS_CLIENT_CA", \Settings.tlsClientCA)
        ] {
            guard let value = environment[name] else { continue }
            if value.isEmpty { problems.append("\(name): must not be empty") } else { s[keyPath: target] = value }
        }
        if let policy = environment["INSIGHTD_VELOCITY_POLICY"] {
            if policy.isEmpty { problems.append("INSIGHTD_VELOCITY_POLICY: must not be empty") } else { s.velocityPolicyFile = policy }
        }
        for (name, target) in [
            ("INSIGHTD_DECISION_POLICY", \Settings.decisionPolicyFile),
            ("INSIGHTD_DECISION_POLICY_SHADOW", \Settings.decisionPolicyShadowFile)
        ] {
            guard let value = environment[name] else { continue }
            if value.isEmpty { problems.append("\(name): must not be empty") } else { s[keyPath: target] = value }
        }
        int("INSIGHTD_INSTANCES", 1...1000, &s.instances)
        sharedEngines(environment, into: &s, problems: &problems)
        if s.isShared && environment["INSIGHTD_THREADS"] == nil { s.threads = Self.sharedModeThreads }
        if (s.tlsCertificate == nil) != (s.tlsPrivateKey == nil) {
            problems.append("INSIGHTD_TLS_CERT and INSIGHTD_TLS_KEY: set both, or neither")
        }
        if s.tlsClientCA != nil && s.tlsCertificate == nil {
            problems.append("INSIGHTD_TLS_CLIENT_CA: client certificates need TLS (set INSIGHTD_TLS_CERT and INSIGHTD_TLS_KEY)")
        }
        return problems.isEmpty ? .success(s) : .failure(SettingsError(problems: problems))
    }

    /// The engines of the multi-instance mode: both or neither, and one hash key file for all
    /// instances (a key generated in each state directory would hash the same person differently).
    /// Values are never echoed: a URL may carry a password.
    private static func sharedEngines(_ environment: [String: String], into s: inout Settings, problems: inout [String]) {
        if let url = environment["INSIGHTD_DATABASE_URL"] {
            if let problem = databaseURLProblem(url) { problems.append(problem) } else { s.databaseURL = url }
        }
        if let url = environment["INSIGHTD_REDIS_URL"] {
            // Read as the daemon will read it, so --check-config finds what the start would.
            do {
                _ = try RedisEndpoint(url)
                s.redisURL = url
            } catch {
                problems.append(
                    "INSIGHTD_REDIS_URL: must be redis://[:password@]host:port[/db] or redis-sentinel://[:password@]host1:26379,host2:26379/MASTER (\(error))"
                )
            }
        }
        if environment["INSIGHTD_DATABASE_URL"] != nil && environment["INSIGHTD_REDIS_URL"] == nil {
            problems.append(
                "INSIGHTD_REDIS_URL: required with INSIGHTD_DATABASE_URL (the instances share their rate limits and velocity in Redis)")
        }
        if environment["INSIGHTD_REDIS_URL"] != nil && environment["INSIGHTD_DATABASE_URL"] == nil {
            problems.append(
                "INSIGHTD_REDIS_URL: only with INSIGHTD_DATABASE_URL (the embedded SQLite mode keeps rate limits and velocity in memory)")
        }
        if environment["INSIGHTD_DATABASE_URL"] != nil && environment["INSIGHTD_HASH_KEY_FILE"] == nil {
            problems.append("INSIGHTD_HASH_KEY_FILE: required with INSIGHTD_DATABASE_URL (every instance must hash with the same keyring)")
        }
        if environment["INSIGHTD_DATABASE_URL"] != nil && environment["INSIGHTD_SIGNING_KEY_DIR"] == nil {
            problems.append(
                "INSIGHTD_SIGNING_KEY_DIR: required with INSIGHTD_DATABASE_URL (every instance must sign with keys every instance publishes: mount one directory on all of them)"
            )
        }
    }

    /// What is wrong with `url` as INSIGHTD_DATABASE_URL, or nil when it names a PostgreSQL
    /// database that libpq will read as written (`PostgresURL`: a password holding an unescaped
    /// `/` or `@` is refused, since libpq would take pieces of it for the host and quote them in
    /// its messages). Never quotes the value. Checked here, so at start and by `--check-config`,
    /// and by insightctl, which reads the variable on its own.
    public static func databaseURLProblem(_ url: String) -> String? {
        do {
            _ = try PostgresURL(parsing: url)
            return nil
        } catch {
            return "INSIGHTD_DATABASE_URL: \(error)"
        }
    }

    /// Parses "host:port" or "[v6]:port".
    static func parseListen(_ text: String) -> (String, Int)? {
        let host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.isEmpty, let number = Int(port), (0...65535).contains(number) else { return nil }
        return (String(host), number)
    }

    /// The rate limiter's part of the settings.
    public var rateLimitSettings: RateLimitSettings {
        var r = RateLimitSettings()
        r.compliance.windowSeconds = reportingWindow
        r.compliance.allowanceShare = Double(overdueAllowancePercent) / 100
        r.compliance.allowanceMinimum = overdueAllowanceMinimum
        r.compliance.floorShare = Double(penaltyFloorPercent) / 100
        r.compliance.recoverySeconds = penaltyRecovery
        r.devicePerHour = devicePerHour
        r.insightQuotaFactor = Double(insightQuotaPercent) / 100
        return r
    }

    /// The metrics listener's HTTP settings: one loop, a few connections, plain HTTP (a scraper
    /// on a trusted network; the API's TLS settings are not used).
    public var metricsHTTPConfiguration: HTTPServerConfiguration? {
        guard let metricsListen else { return nil }
        var c = HTTPServerConfiguration()
        c.host = metricsListen.host
        c.port = metricsListen.port
        c.threads = 1
        c.maxBodyBytes = 0
        c.maxConnections = 64
        c.maxConnectionsPerAddress = 0
        c.headerTimeout = headerTimeout
        c.requestTimeout = requestTimeout
        c.idleTimeout = idleTimeout
        c.writeTimeout = writeTimeout
        return c
    }

    /// The HTTP server's part of the settings.
    public var httpConfiguration: HTTPServerConfiguration {
        var c = HTTPServerConfiguration()
        c.host = listenHost
        c.port = listenPort
        c.threads = threads
        c.maxBodyBytes = maxBodyBytes
        c.maxHeaderBytes = maxHeaderBytes
        c.maxConnections = maxConnections
        c.maxConnectionsPerAddress = maxConnectionsPerAddress
        c.headerTimeout = headerTimeout
        c.requestTimeout = requestTimeout
        c.idleTimeout = idleTimeout
        c.writeTimeout = writeTimeout
        if let tlsCertificate, let tlsPrivateKey {
            c.tls = TLSConfiguration(certificatePath: tlsCertificate, privateKeyPath: tlsPrivateKey, clientCAPath: tlsClientCA)
        }
        return c
    }
}

/// A host and port to listen on.
public struct ListenAddress: Sendable, Equatable {
    public var host: String
    /// 0: any free port.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
}

/// Everything wrong with a configuration, one line per problem.
public struct SettingsError: Error, CustomStringConvertible, Sendable {
    public let problems: [String]
    public var description: String { problems.joined(separator: "\n") }
}
