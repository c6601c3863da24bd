import InsightApp
import XCTest

final class SettingsTests: XCTestCase {
    func testDefaults() throws {
        let s = try Settings.load(from: [:]).get()
        XCTAssertEqual(s.listenHost, "127.0.0.1")
        XCTAssertEqual(s.listenPort, 8080)
        XCTAssertEqual(s.stateDirectory, "/var/lib/insightd")
        XCTAssertEqual(s.resolvedHashKeyFile, "/var/lib/insightd/hash.key")
        XCTAssertEqual(s.resolvedSigningKeyDirectory, "/var/lib/insightd/signing-keys")
        XCTAssertEqual(s.signingKeyRetention, 30 * 86_400)
        XCTAssertEqual(s.databasePath, "/var/lib/insightd/insightd.db")
        XCTAssertEqual(s.consumptionGrace, 900)
        XCTAssertGreaterThanOrEqual(s.threads, 1)
    }

    func testEveryVariableIsRead() throws {
        let s = try Settings.load(from: [
            "INSIGHTD_LISTEN": "[::1]:0", "INSIGHTD_STATE_DIR": "/tmp/x", "INSIGHTD_HASH_KEY_FILE": "/run/key",
            "INSIGHTD_MODELS_DIR": "/m", "INSIGHTD_MODEL_CURRENT": "1.0", "INSIGHTD_THREADS": "3",
            "INSIGHTD_LOG_LEVEL": "WARNING", "INSIGHTD_CONSUMPTION_GRACE": "60", "INSIGHTD_MAX_BODY_BYTES": "2048",
            "INSIGHTD_MAX_HEADER_BYTES": "4096", "INSIGHTD_MAX_CONNECTIONS": "10", "INSIGHTD_REQUEST_TIMEOUT": "5",
            "INSIGHTD_HEADER_TIMEOUT": "4",
            "INSIGHTD_IDLE_TIMEOUT": "7", "INSIGHTD_WRITE_TIMEOUT": "8", "INSIGHTD_WRITE_QUEUE": "9",
            "INSIGHTD_COMMIT_BATCH": "11", "INSIGHTD_SHUTDOWN_TIMEOUT": "12", "INSIGHTD_CREDENTIAL_CACHE": "0",
            "INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS": "0", "INSIGHTD_SIGNING_KEY_DIR": "/run/sk", "INSIGHTD_SIGNING_KEY_RETENTION": "60"
        ]).get()
        XCTAssertEqual(s.resolvedSigningKeyDirectory, "/run/sk")
        XCTAssertEqual(s.signingKeyRetention, 60)
        XCTAssertEqual(s.listenHost, "::1")
        XCTAssertEqual(s.listenPort, 0)
        XCTAssertEqual(s.resolvedHashKeyFile, "/run/key")
        XCTAssertTrue(s.modelsDirectoryExplicit)
        XCTAssertEqual(s.currentModel, "1.0")
        XCTAssertEqual(s.logLevel, .warning)
        XCTAssertEqual(
            [
                s.threads, s.consumptionGrace, s.maxBodyBytes, s.maxHeaderBytes, s.maxConnections, s.requestTimeout,
                s.idleTimeout, s.writeTimeout, s.writeQueueCapacity, s.commitBatch, s.shutdownTimeout,
                s.credentialCacheSeconds, s.headerTimeout
            ], [3, 60, 2048, 4096, 10, 5, 7, 8, 9, 11, 12, 0, 4])
        XCTAssertEqual(s.httpConfiguration.headerTimeout, 4)
        XCTAssertEqual(s.metricsHTTPConfiguration?.headerTimeout, 4)
        XCTAssertEqual(s.httpConfiguration.maxBodyBytes, 2048)
        XCTAssertEqual(s.httpConfiguration.maxConnectionsPerAddress, 0)
        // By default one address holds a sixteenth of the places: a few addresses cannot fill them.
        let defaults = try Settings.load(from: [:]).get().httpConfiguration
        XCTAssertEqual([defaults.maxConnections, defaults.maxConnectionsPerAddress, defaults.headerTimeout], [1024, 64, 5])
        XCTAssertEqual(Set(Settings.variables.map(\.name)).count, Settings.variables.count)
    }

    /// `/metrics` is served apart from the API: on loopback unless the operator says where, or
    /// not at all, and never on the API's own port.
    func testTheMetricsListenerIsApartFromTheAPI() throws {
        XCTAssertEqual(try Settings.load(from: [:]).get().metricsListen, ListenAddress(host: "127.0.0.1", port: 9464))
        XCTAssertEqual(
            try Settings.load(from: ["INSIGHTD_METRICS_LISTEN": "[::]:9100"]).get().metricsListen,
            ListenAddress(host: "::", port: 9100))
        XCTAssertNil(try Settings.load(from: ["INSIGHTD_METRICS_LISTEN": "off"]).get().metricsListen)
        XCTAssertNil(try Settings.load(from: ["INSIGHTD_METRICS_LISTEN": "off"]).get().metricsHTTPConfiguration)
        let configuration = try XCTUnwrap(
            try Settings.load(from: ["INSIGHTD_TLS_CERT": "/c", "INSIGHTD_TLS_KEY": "/k"]).get()
                .metricsHTTPConfiguration)
        XCTAssertNil(configuration.tls)
        XCTAssertEqual(configuration.threads, 1)
        for (api, metrics) in [("0.0.0.0:9464", "127.0.0.1:9464"), ("127.0.0.1:9100", "[::]:9100")] {
            XCTAssertThrowsError(try Settings.load(from: ["INSIGHTD_LISTEN": api, "INSIGHTD_METRICS_LISTEN": metrics]).get(), api)
        }
        XCTAssertNoThrow(try Settings.load(from: ["INSIGHTD_LISTEN": "127.0.0.1:0", "INSIGHTD_METRICS_LISTEN": "127.0.0.1:0"]).get())
    }

    func testEveryProblemIsReported() {
        let cases: [(String, String)] = [
            ("INSIGHTD_LISTEN", "8080"), ("INSIGHTD_LISTEN", "host:99999"), ("INSIGHTD_LISTEN", ":80"),
            ("INSIGHTD_LISTEN", "::1:80"), ("INSIGHTD_THREADS", "0"), ("INSIGHTD_THREADS", "two"),
            ("INSIGHTD_LOG_LEVEL", "loud"), ("INSIGHTD_CONSUMPTION_GRACE", "1.5"), ("INSIGHTD_CONSUMPTION_GRACE", "59"),
            ("INSIGHTD_MAX_BODY_BYTES", "-1"), ("INSIGHTD_STATE_DIR", ""), ("INSIGHTD_REQUEST_TIMEOUT", "0"),
            ("INSIGHTD_HEADER_TIMEOUT", "0"), ("INSIGHTD_HEADER_TIMEOUT", "301"),
            ("INSIGHTD_LISTN", "127.0.0.1:80"), ("INSIGHTD_TLS_CERT", "/c.pem"), ("INSIGHTD_TLS_KEY", "/k.pem"),
            ("INSIGHTD_TLS_CLIENT_CA", "/ca.pem"), ("INSIGHTD_RETENTION_DAYS", "0"), ("INSIGHTD_AUTHORIZATION_COOLDOWN", "-1"),
            ("INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS", "-1"), ("INSIGHTD_SIGNING_KEY_DIR", ""),
            ("INSIGHTD_SIGNING_KEY_RETENTION", "-1"), ("INSIGHTD_SIGNING_KEY_RETENTION", "315360001"),
            ("INSIGHTD_SIGNING_KEY_RETENTION", "30d"), ("INSIGHTD_METRICS_LISTEN", "9464"),
            ("INSIGHTD_METRICS_LISTEN", ""), ("INSIGHTD_METRICS_LISTEN", "127.0.0.1:8080")
        ]
        for (name, value) in cases {
            guard case .failure(let error) = Settings.load(from: [name: value]) else {
                XCTFail("\(name)=\(value) accepted"); continue
            }
            XCTAssertTrue(error.description.contains(name), "\(name): \(error)")
        }
        guard case .failure(let error) = Settings.load(from: ["INSIGHTD_THREADS": "0", "INSIGHTD_LOG_LEVEL": "x"]) else {
            return XCTFail("accepted")
        }
        XCTAssertEqual(error.problems.count, 2)
    }

    /// A retry entry (one consumption grace) names a receipt head (kept the retention period).
    func testTheConsumptionGraceIsAtMostTheRetention() throws {
        XCTAssertEqual(
            try Settings.load(from: ["INSIGHTD_CONSUMPTION_GRACE": "86400", "INSIGHTD_RETENTION_DAYS": "1"]).get()
                .consumptionGrace, 86_400)
        guard case .failure(let error) = Settings.load(from: ["INSIGHTD_CONSUMPTION_GRACE": "86401", "INSIGHTD_RETENTION_DAYS": "1"])
        else { return XCTFail("a grace longer than the retention was accepted") }
        XCTAssertTrue(
            error.description.contains("INSIGHTD_CONSUMPTION_GRACE=86401: must be at most INSIGHTD_RETENTION_DAYS (1)"), "\(error)")
    }

    /// A database URL whose password holds an unescaped reserved character is refused at start
    /// and by --check-config (both read `Settings.load`), naming the problem and no piece of the
    /// password; percent-encoded, the same password is accepted.
    func testADatabaseURLLibpqWouldMisreadIsRefusedWithoutItsPassword() throws {
        let shared = [
            "INSIGHTD_REDIS_URL": "redis://cache:6379/0", "INSIGHTD_HASH_KEY_FILE": "/run/key",
            "INSIGHTD_SIGNING_KEY_DIR": "/run/signing-keys"
        ]
        for character in ["/", "@", "?", "#", "[", "]", " ", "%", "\""] {
            var environment = shared
            environment["INSIGHTD_DATABASE_URL"] = "postgres://insightd:Qx7\(character)Zk4@db:5432/insightd?sslmode=require"
            guard case .failure(let error) = Settings.load(from: environment) else {
                XCTFail("a password holding \(character) as is was accepted"); continue
            }
            XCTAssertEqual(error.problems.count, 1, "\(error)")
            XCTAssertTrue(
                error.description.contains(
                    "INSIGHTD_DATABASE_URL: the user name or password holds a character that must be percent-encoded"),
                "\(error)")
            XCTAssertFalse(error.description.contains("Qx7") || error.description.contains("Zk4"), "\(error)")
            let escaped = character.utf8.map { "%" + String($0, radix: 16, uppercase: true) }.joined()
            environment["INSIGHTD_DATABASE_URL"] = "postgres://insightd:Qx7\(escaped)Zk4@db:5432/insightd?sslmode=require"
            XCTAssertNoThrow(try Settings.load(from: environment).get(), character)
        }
        for (url, problem) in [
            ("mysql://u:p@db/x", "must be a PostgreSQL connection URI"), ("postgres://db:99999/x", "port"),
            ("postgres://u:p@db/x?sslmode=%zz", "%25")
        ] {
            XCTAssertTrue(Settings.databaseURLProblem(url)?.contains(problem) == true, url)
        }
    }

    func testTheSharedEnginesGoTogetherWithOneHashKeyFile() throws {
        let shared = [
            "INSIGHTD_DATABASE_URL": "postgres://insightd:s3cret@db:5432/insightd?sslmode=require",
            "INSIGHTD_REDIS_URL": "redis://:s3cret@cache:6379/0", "INSIGHTD_HASH_KEY_FILE": "/run/key",
            "INSIGHTD_SIGNING_KEY_DIR": "/run/signing-keys", "INSIGHTD_INSTANCES": "4"
        ]
        let s = try Settings.load(from: shared).get()
        XCTAssertTrue(s.isShared)
        XCTAssertEqual(s.databaseURL, shared["INSIGHTD_DATABASE_URL"])
        XCTAssertEqual(s.redisURL, shared["INSIGHTD_REDIS_URL"])
        XCTAssertEqual(s.instances, 4)
        XCTAssertEqual(
            s.threads, min(64, 2 * ProcessInfo.processInfo.activeProcessorCount), "a second loop per core while one waits for a read")
        var explicit = shared
        explicit["INSIGHTD_THREADS"] = "3"
        XCTAssertEqual(try Settings.load(from: explicit).get().threads, 3)
        XCTAssertFalse(try Settings.load(from: [:]).get().isShared)
        XCTAssertEqual(try Settings.load(from: [:]).get().instances, 3)

        func problems(_ environment: [String: String]) -> [String] {
            guard case .failure(let error) = Settings.load(from: environment) else { return [] }
            return error.problems
        }
        var missing = shared
        missing["INSIGHTD_REDIS_URL"] = nil
        XCTAssertEqual(problems(missing).count, 1)
        XCTAssertTrue(problems(missing)[0].hasPrefix("INSIGHTD_REDIS_URL: required with INSIGHTD_DATABASE_URL"))
        missing = shared
        missing["INSIGHTD_HASH_KEY_FILE"] = nil
        XCTAssertTrue(problems(missing).first?.hasPrefix("INSIGHTD_HASH_KEY_FILE: required") ?? false)
        // Every instance signs with keys every instance publishes: one directory, named.
        missing = shared
        missing["INSIGHTD_SIGNING_KEY_DIR"] = nil
        XCTAssertEqual(problems(missing).count, 1)
        XCTAssertTrue(problems(missing).first?.hasPrefix("INSIGHTD_SIGNING_KEY_DIR: required with INSIGHTD_DATABASE_URL") ?? false)
        XCTAssertEqual(try Settings.load(from: shared).get().resolvedSigningKeyDirectory, "/run/signing-keys")
        XCTAssertTrue(problems(["INSIGHTD_REDIS_URL": "redis://cache:6379"]).first?.contains("only with INSIGHTD_DATABASE_URL") ?? false)
        // A URL may carry a password: a wrong one is named, never echoed.
        for (name, value) in [("INSIGHTD_DATABASE_URL", "mysql://u:s3cret@db/x"), ("INSIGHTD_REDIS_URL", "rediss://:s3cret@c")] {
            var wrong = shared
            wrong[name] = value
            let found = problems(wrong)
            XCTAssertTrue(found.contains { $0.hasPrefix(name) }, "\(found)")
            XCTAssertFalse(found.joined().contains("s3cret"), "\(found)")
        }
        XCTAssertFalse(problems(["INSIGHTD_INSTANCES": "0"]).isEmpty)
    }

    func testTheEnginesMayBeNamedInTheirFailoverForms() throws {
        var shared = [
            "INSIGHTD_DATABASE_URL": "postgres://insightd@db1:5432,db2:5432/insightd?target_session_attrs=read-write",
            "INSIGHTD_REDIS_URL": "redis-sentinel://:s3cret@s1:26379,s2:26379,s3:26379/insightd?sentinel_password=s3cret2",
            "INSIGHTD_HASH_KEY_FILE": "/run/key", "INSIGHTD_SIGNING_KEY_DIR": "/run/signing-keys"
        ]
        XCTAssertEqual(try Settings.load(from: shared).get().redisURL, shared["INSIGHTD_REDIS_URL"])
        shared["INSIGHTD_REDIS_URL"] = "redis-sentinel://:s3cret@s1:26379,,s3:26379/insightd"
        guard case .failure(let error) = Settings.load(from: shared) else { return XCTFail("an empty sentinel was accepted") }
        XCTAssertEqual(error.problems.count, 1)
        XCTAssertTrue(error.problems[0].hasPrefix("INSIGHTD_REDIS_URL: must be redis://"), error.problems[0])
        XCTAssertTrue(error.problems[0].contains("a sentinel between commas is missing"), error.problems[0])
        XCTAssertFalse(error.problems[0].contains("s3cret"), error.problems[0])

        shared["INSIGHTD_REDIS_URL"] = "redis-sentinel://s1:26379/insightd"
        shared["INSIGHTD_DATABASE_URL"] = "postgres://insightd:s3cret@db1:5432,db2:5432/insightd?target_session_attrs=any"
        guard case .failure(let standby) = Settings.load(from: shared) else { return XCTFail("a URL that may pick a standby was accepted") }
        XCTAssertEqual(standby.problems.count, 1)
        XCTAssertTrue(
            standby.problems[0].hasPrefix("INSIGHTD_DATABASE_URL: target_session_attrs must be read-write or primary"),
            standby.problems[0])
        XCTAssertFalse(standby.problems[0].contains("s3cret"), standby.problems[0])
    }

    func testTLSSettings() throws {
        let s = try Settings.load(from: [
            "INSIGHTD_TLS_CERT": "/c.pem", "INSIGHTD_TLS_KEY": "/k.pem",
            "INSIGHTD_TLS_CLIENT_CA": "/ca.pem"
        ]).get()
        XCTAssertEqual(s.httpConfiguration.tls?.certificatePath, "/c.pem")
        XCTAssertEqual(s.httpConfiguration.tls?.privateKeyPath, "/k.pem")
        XCTAssertEqual(s.httpConfiguration.tls?.clientCAPath, "/ca.pem")
        XCTAssertNil(try Settings.load(from: [:]).get().httpConfiguration.tls)
    }

    func testArguments() throws {
        var args = try Arguments(["callers", "create", "--name", "a b", "--json", "--rate=5"], valueOptions: ["name", "rate"])
        XCTAssertEqual(args.positional, ["callers", "create"])
        XCTAssertEqual(args.option("name"), "a b")
        XCTAssertEqual(args.option("rate"), "5")
        XCTAssertTrue(args.flag("json"))
        XCTAssertNoThrow(try args.checkAllConsumed())
        var extra = try Arguments(["--nmae", "x"], valueOptions: ["name"])
        _ = extra.option("name")
        XCTAssertThrowsError(try extra.checkAllConsumed())
        XCTAssertThrowsError(try Arguments(["--name"], valueOptions: ["name"]))
        XCTAssertThrowsError(try Arguments(["--json=1"], valueOptions: []))
    }
}

/// `INSIGHTD_LABEL_MATURITY_DAYS` (docs/api.md "GET /admin/v1/model-performance") is a known
/// variable with its range.
final class LabelMaturitySettingsTests: XCTestCase {
    func testLabelMaturityDays() throws {
        XCTAssertEqual(try Settings.load(from: [:]).get().labelMaturityDays, 60)
        XCTAssertEqual(try Settings.load(from: ["INSIGHTD_LABEL_MATURITY_DAYS": "90"]).get().labelMaturityDays, 90)
        XCTAssertEqual(try Settings.load(from: ["INSIGHTD_LABEL_MATURITY_DAYS": "0"]).get().labelMaturityDays, 0)
        for bad in ["-1", "3651", "sixty"] {
            guard case .failure(let error) = Settings.load(from: ["INSIGHTD_LABEL_MATURITY_DAYS": bad]) else {
                XCTFail("\(bad) accepted"); continue
            }
            XCTAssertTrue(error.description.contains("INSIGHTD_LABEL_MATURITY_DAYS"), "\(error)")
        }
    }
}

final class ShadowSettingsTests: XCTestCase {
    func testShadowVersionsAreReadAndCheckedForShape() throws {
        XCTAssertEqual(try Settings.load(from: [:]).get().shadowModels, [])
        XCTAssertEqual(try Settings.load(from: ["INSIGHTD_MODEL_SHADOW": "3.0, 1.0"]).get().shadowModels, ["3.0", "1.0"])
        for (value, expected) in [
            ("3.0,,1.0", "INSIGHTD_MODEL_SHADOW: must be model versions (digits separated by dots) separated by commas"),
            ("v3", "INSIGHTD_MODEL_SHADOW: must be model versions (digits separated by dots) separated by commas"),
            ("1,2,3,4,5", "INSIGHTD_MODEL_SHADOW: at most 4 shadow versions"),
            ("1.0,1.0", "INSIGHTD_MODEL_SHADOW: names a version twice")
        ] {
            guard case .failure(let error) = Settings.load(from: ["INSIGHTD_MODEL_SHADOW": value]) else {
                XCTFail("\(value) accepted"); continue
            }
            XCTAssertEqual(error.problems, [expected])
        }
    }
}
