import Foundation
import InsightApp
import InsightDomain

/// What every command runs with: the environment, where the store and the state directory are,
/// the time, and the way to a running daemon.
struct CommandContext {
    let environment: [String: String]
    /// `--state-dir`, else `$INSIGHTD_STATE_DIR`, else the daemon's default: also where the hash
    /// key file and the signing keys are unless the environment names them.
    let stateDirectory: String
    let store: ControlStore
    let now: Milliseconds
    let transport: (any AdminTransport)?

    init(stateDirectory explicit: String?, environment: [String: String], transport: (any AdminTransport)?) throws {
        let now = SystemClock().now()
        self.environment = environment
        stateDirectory = explicit ?? environment["INSIGHTD_STATE_DIR"] ?? Settings().stateDirectory
        store = ControlStore(
            location: try ControlStore.location(
                stateDirectory: stateDirectory, explicit: explicit != nil,
                environment: environment),
            now: now)
        self.now = now
        self.transport = transport
    }

    /// The running daemon's API, as `--url` and `--key-file` (or `$INSIGHTD_ADMIN_KEY`) name it.
    func daemon(_ invocation: Invocation) throws -> DaemonConnection {
        try DaemonConnection(invocation, environment: environment, transport: transport)
    }

    /// The daemon's setting `name` read from the environment and checked as the daemon checks it.
    func setting<T>(_ name: String, _ value: (Settings) -> T) throws -> T {
        switch Settings.load(from: environment.filter { $0.key == name }) {
        case .success(let settings): return value(settings)
        case .failure(let error): throw AppError(error.description)
        }
    }
}

/// The store as insightctl reaches it: the PostgreSQL database of `INSIGHTD_DATABASE_URL` when it
/// is set, else SQLite in the state directory. Every command that reads or writes the store goes
/// through here, so that how a store is opened is decided in this one place.
struct ControlStore {
    let location: StoreLocation
    let now: Milliseconds

    /// The store of `INSIGHTD_DATABASE_URL`, else the state directory's (then `--state-dir`, which
    /// names an embedded store, contradicts the URL).
    static func location(stateDirectory: String, explicit: Bool, environment: [String: String]) throws -> StoreLocation {
        guard let url = environment["INSIGHTD_DATABASE_URL"] else { return .sqlite(stateDirectory: stateDirectory) }
        guard !explicit else {
            throw AppError(
                "--state-dir names an embedded SQLite store, but INSIGHTD_DATABASE_URL names a PostgreSQL one: unset one of them")
        }
        if let problem = Settings.databaseURLProblem(url) { throw AppError(problem) }
        return .postgres(url: url)
    }

    func registration() throws -> any CallerRegistration { try StoreBackend.registration(location, now: now) }
    func trainingVectors() throws -> any TrainingVectorSource { try StoreBackend.trainingVectors(location, now: now) }
    func receiptLog() throws -> any ReceiptLog { try StoreBackend.receiptLog(location, now: now) }
    func purge(olderThan cutoff: Milliseconds) throws -> RetentionReport { try StoreBackend.purge(location, olderThan: cutoff, now: now) }
    func withInterventions<T>(_ body: (any InterventionCatalog) throws -> T) throws -> T {
        try StoreBackend.withInterventions(location, now: now, body)
    }
    func migrate() throws -> [String] { try StoreBackend.migrate(location, now: now) }
    func backup(to target: String) throws -> Int { try StoreBackend.backup(location, to: target) }

    /// Whether the store exists: the state directory's database (a PostgreSQL database is
    /// migrated when empty, and a wrong URL does not connect).
    var exists: Bool {
        switch location {
        case .sqlite(let directory): FileManager.default.fileExists(atPath: Settings.databasePath(stateDirectory: directory))
        case .postgres: true
        }
    }

    /// Refuses a state directory without a database: most likely not the daemon's, where a
    /// new database would hold callers and keys the daemon never sees.
    func requireExisting() throws {
        guard !exists else { return }
        throw AppError(
            """
            no store at \(description): is this the daemon's state directory (--state-dir, else $INSIGHTD_STATE_DIR, \
            else /var/lib/insightd)? Create a new store with 'insightctl init', or add --create
            """)
    }

    var description: String {
        switch location {
        case .sqlite(let directory): Settings.databasePath(stateDirectory: directory)
        case .postgres: "INSIGHTD_DATABASE_URL"
        }
    }
}
