// swift-tools-version:6.0
// insightd — a fraud-risk decision daemon. Every dependency is the toolchain's own or a
// Debian C library reached through a system-library target.
import PackageDescription

let package = Package(
    name: "insightd",
    products: [
        .executable(name: "insightd", targets: ["insightd"]),
        .executable(name: "insightctl", targets: ["insightctl"]),
        .executable(name: "insightd-demo", targets: ["insightd-demo"]),
        .library(name: "InsightClient", targets: ["InsightClient"])
    ],
    targets: [
        // C libraries from Debian packages. Each is imported by exactly one Swift module.
        .systemLibrary(
            name: "CLibEvent", pkgConfig: "libevent_pthreads",
            providers: [.apt(["libevent-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // hiredis (libhiredis-dev) without pkg-config: its hiredis.pc adds -D_FILE_OFFSET_BITS=64,
        // a flag SwiftPM refuses with a warning on every build (and a no-op on 64-bit systems).
        // The shim includes <hiredis/hiredis.h> from /usr/include; the module map links it.
        .systemLibrary(name: "CHiredis"),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        // Infrastructure: domain-free.
        .target(name: "Crypto", dependencies: ["COpenSSL", "CSodium"]),
        .target(name: "SQLiteClient", dependencies: ["CSQLite"]),
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        .target(name: "JSON"),
        .target(name: "Locking"),
        .target(name: "HTTPServer", dependencies: ["CLibEvent", "Locking"]),
        .target(name: "Telemetry", dependencies: ["Locking"]),
        .target(name: "RedisClient", dependencies: ["CHiredis"]),

        // The behavioural model: features, tree ensembles, registry.
        .target(name: "CoachingModel", dependencies: ["Crypto", "JSON"]),

        // The product.
        .target(name: "InsightDomain", dependencies: ["Crypto", "JSON"]),
        .executableTarget(name: "MigrationEmbedder"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["MigrationEmbedder"]),
        .target(
            name: "InsightStorage",
            dependencies: ["InsightDomain", "SQLiteClient", "Crypto"],
            plugins: ["EmbedMigrations"]),
        // The PostgreSQL store of the multi-instance mode (`INSIGHTD_DATABASE_URL`).
        .target(
            name: "InsightPostgres",
            dependencies: ["InsightDomain", "PostgresClient", "Crypto"],
            plugins: ["EmbedMigrations"]),
        // What every instance of the multi-instance mode must see at once, in Redis
        // (`INSIGHTD_REDIS_URL`): rate limits and velocity.
        .target(name: "InsightRedis", dependencies: ["InsightDomain", "RedisClient", "Telemetry", "Locking"]),
        // The use cases: each rule of the product in one place, over the store ports.
        .target(name: "InsightServices", dependencies: ["InsightDomain", "CoachingModel", "Crypto", "Telemetry", "Locking"]),
        // The admin console's static files (console/), compiled in by a build-tool plugin.
        .executableTarget(name: "ConsoleEmbedder"),
        .plugin(name: "EmbedConsole", capability: .buildTool(), dependencies: ["ConsoleEmbedder"]),
        .target(name: "InsightConsole", plugins: ["EmbedConsole"]),
        .target(
            name: "InsightAPI",
            dependencies: [
                "InsightServices", "InsightDomain", "HTTPServer", "JSON", "Crypto", "CoachingModel", "Telemetry",
                "InsightConsole"
            ]),
        .target(
            name: "InsightApp",
            dependencies: [
                "InsightAPI", "InsightServices", "InsightStorage", "InsightPostgres", "InsightRedis", "RedisClient",
                "PostgresClient", "InsightDomain", "HTTPServer",
                "Crypto", "CoachingModel", "JSON", "SQLiteClient", "Telemetry", "Locking"
            ]),
        .executableTarget(name: "insightd", dependencies: ["InsightApp"]),
        // insightctl's commands, a library so that tests run them in process.
        .target(
            name: "InsightControl",
            dependencies: ["InsightApp", "InsightAPI", "InsightDomain", "Crypto", "JSON"]),
        .executableTarget(name: "insightctl", dependencies: ["InsightControl", "InsightApp", "JSON"]),

        // `make bench`: in-process micro-benchmarks (the HTTP benchmark is bench/run.sh).
        .executableTarget(
            name: "insightd-bench",
            dependencies: [
                "CoachingModel", "JSON", "InsightDomain", "InsightStorage",
                "Crypto", "SQLiteClient"
            ]),

        // The Swift client library for calling services, and the example a new integrator runs.
        // Crypto: verifying the Ed25519 signatures of answers (OpenSSL). HTTPServer: the demo's
        // --web payment page; page/ holds that page's files, read at run time.
        .target(name: "InsightClient", dependencies: ["Crypto"]),
        .executableTarget(name: "insightd-demo", dependencies: ["InsightClient", "HTTPServer"], exclude: ["page"]),

        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], exclude: ["Fixtures"]),
        .testTarget(name: "SQLiteClientTests", dependencies: ["SQLiteClient"]),
        // Test support: a free loopback port, for the tests that start servers of their own.
        .target(name: "LoopbackPort", path: "Tests/LoopbackPort"),
        // Test support: a real PostgreSQL server in a temporary directory, started as an ordinary process.
        .target(name: "PostgresTesting", dependencies: ["PostgresClient", "Locking", "LoopbackPort"], path: "Tests/PostgresTesting"),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient", "PostgresTesting"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer"]),
        .testTarget(name: "TelemetryTests", dependencies: ["Telemetry"]),
        // Test support: a private redis-server started as an ordinary process.
        .target(name: "RedisTesting", dependencies: ["RedisClient", "Locking", "LoopbackPort"], path: "Tests/RedisTesting"),
        .testTarget(name: "RedisClientTests", dependencies: ["RedisClient", "RedisTesting"]),
        .testTarget(
            name: "InsightRedisTests",
            dependencies: [
                "InsightRedis", "RedisClient", "RedisTesting", "InsightDomain", "InsightTesting",
                "Telemetry"
            ]),
        // The behaviour every backend of the rate limits and of the evaluation's gate must have,
        // run against the in-memory ones and against a real redis-server.
        .testTarget(
            name: "RateLimitContractTests",
            dependencies: [
                "InsightDomain", "InsightRedis", "RedisClient", "RedisTesting", "InsightStoreFakes", "Telemetry",
                "Locking"
            ]),
        .testTarget(name: "CoachingModelTests", dependencies: ["CoachingModel", "JSON", "InsightTesting"]),
        .testTarget(name: "InsightStorageTests", dependencies: ["InsightStorage", "InsightDomain"]),
        .testTarget(
            name: "InsightPostgresTests",
            dependencies: [
                "InsightPostgres", "PostgresClient", "PostgresTesting", "InsightStorage",
                "SQLiteClient", "InsightDomain", "StoreContract"
            ]),
        // Test support: a manual clock, a seeded generator and other fixtures shared by test targets.
        .target(name: "InsightTesting", dependencies: ["InsightDomain"], path: "Tests/InsightTesting"),
        // The behaviour every backend of the store ports must have (a library, so that a backend's
        // own test target runs it), the in-memory fakes, and the suite run against SQLite and the fakes.
        .target(name: "StoreContract", dependencies: ["InsightDomain", "Crypto"], path: "Tests/StoreContract"),
        .target(name: "InsightStoreFakes", dependencies: ["InsightDomain", "Crypto"], path: "Tests/InsightStoreFakes"),
        .testTarget(
            name: "StoreContractTests",
            dependencies: ["StoreContract", "InsightStoreFakes", "InsightStorage", "InsightDomain"]),
        .testTarget(name: "InsightDomainTests", dependencies: ["InsightDomain", "Crypto", "InsightTesting"]),
        // The use cases in process, over the in-memory fakes and a manual clock (no daemon, no socket).
        .testTarget(
            name: "InsightServicesTests",
            dependencies: [
                "InsightServices", "InsightStoreFakes", "InsightTesting", "InsightDomain",
                "CoachingModel", "Telemetry", "Crypto"
            ]),
        .testTarget(name: "InsightAppTests", dependencies: ["InsightApp", "JSON", "InsightDomain"]),
        // Test support: a real insightd on port 0 in a temporary state directory (`TestDaemon`), reached
        // in process through its API handler or over a socket, and the fixtures the daemon's tests share.
        .target(
            name: "DaemonTesting",
            dependencies: ["InsightApp", "InsightAPI", "InsightDomain", "HTTPServer", "JSON", "Locking", "SQLiteClient"],
            path: "Tests/DaemonTesting"),
        // The client library against a real daemon over HTTP.
        .testTarget(
            name: "InsightClientTests",
            dependencies: ["InsightClient", "DaemonTesting", "InsightDomain", "Crypto", "LoopbackPort"]),
        // insightctl in process: its command line and help, and its commands on a real SQLite store
        // in a temporary directory, some beside a daemon that serves what they changed.
        .testTarget(
            name: "InsightControlTests",
            dependencies: ["InsightControl", "DaemonTesting", "InsightApp", "InsightDomain", "Crypto", "JSON"]),
        // The API's endpoints in process (statuses, problems, headers, JSON, what is stored), its
        // readers and router as values.
        .testTarget(
            name: "InsightAPITests",
            dependencies: [
                "DaemonTesting", "InsightApp", "InsightControl", "InsightAPI", "InsightServices", "InsightStorage",
                "InsightDomain", "CoachingModel", "HTTPServer", "JSON", "InsightTesting"
            ]),
        // The API over real sockets: connection limits, Expect: 100-continue, back-pressure, hostile bodies.
        .testTarget(
            name: "APITransportTests",
            dependencies: [
                "DaemonTesting", "InsightAPI", "InsightServices", "InsightStorage", "InsightDomain", "JSON",
                "SQLiteClient"
            ]),
        // Privacy through the daemon: opt-outs, hash keys, retention, transparency and erasure,
        // tenants kept apart, private state files, no identifier stored or logged.
        .testTarget(
            name: "InsightPrivacyTests",
            dependencies: [
                "DaemonTesting", "InsightApp", "InsightControl", "InsightStorage", "InsightDomain", "Crypto",
                "JSON", "SQLiteClient", "InsightTesting"
            ]),
        // Models served, shadowed and reported on; training capture and export (SQLite and PostgreSQL).
        .testTarget(
            name: "ModelsAndTrainingTests",
            dependencies: [
                "DaemonTesting", "InsightApp", "InsightControl", "InsightDomain", "InsightPostgres", "CoachingModel",
                "JSON", "SQLiteClient", "InsightTesting", "PostgresTesting"
            ]),
        // Running the daemon: start-up and its refusals, one instance per state directory, backup,
        // restarts with velocity's replay, metrics and the Grafana dashboard.
        .testTarget(
            name: "DaemonOperationsTests",
            dependencies: [
                "DaemonTesting", "InsightApp", "InsightControl", "InsightStorage", "InsightDomain", "JSON",
                "SQLiteClient", "InsightTesting", "PostgresTesting", "RedisTesting"
            ]),
        // Signed receipts (checked by Python's cryptography) and retried evaluations.
        .testTarget(
            name: "ReceiptsAndRetriesTests",
            dependencies: ["DaemonTesting", "InsightApp", "InsightControl", "InsightDomain", "Crypto", "JSON", "SQLiteClient"]),
        // openapi/openapi.json against the router, the sources and a live daemon; README's API table.
        .testTarget(
            name: "OpenAPIContractTests",
            dependencies: ["DaemonTesting", "InsightAPI", "InsightDomain", "InsightStorage", "CoachingModel", "JSON"])
    ],
    swiftLanguageModes: [.v6]
)
