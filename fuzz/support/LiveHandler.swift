// Shared by the api-* fuzz targets: the real InsightAPIHandler wired as InsightService wires it
// (SQLite store in a temporary directory, group-commit writer, rate limiter, models from
// models/), called in-process with an HTTPResponder that hands the response back.
import CoachingModel
import Dispatch
import Foundation
import HTTPServer
import InsightAPI
import InsightDomain
import InsightStorage
import JSON
import Telemetry

final class LiveHandler: @unchecked Sendable {
    // @unchecked: set once in init, then only read; libFuzzer calls the target from one thread.
    let handler: InsightAPIHandler
    /// A production caller with every role and a quota the fuzzer cannot exhaust.
    let key: String
    /// A sandbox caller with every role, for the Insight-Override paths.
    let sandboxKey: String
    private(set) var knownInsightIds: [String] = []
    private(set) var knownEventIds: [String] = []
    private var sequence = 0

    init() {
        do {
            // tmpfs when there is one: every 200 is committed (fsync) before it is answered.
            let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
            let directory = "\(base)/insightd-fuzz-\(getpid())"
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            stateDirectory = directory
            atexit { try? FileManager.default.removeItem(atPath: stateDirectory) }
            let path = "\(directory)/insightd.db"
            let clock = SystemClock()
            let (db, _) = try Database.openMigrated(path: path, now: clock.now())
            let registry = CallerRegistry(db)
            let all: Set<Role> = [.evaluate, .labels, .admin]
            key = try registry.create(name: "fuzz", environment: .production, roles: all, rate: 1_000_000,
                                      burst: 1_000_000, now: clock.now(), callerId: "caller_fuzz").1.token
            sandboxKey = try registry.create(name: "fuzz-sandbox", environment: .sandbox, roles: all, rate: 1_000_000,
                                             burst: 1_000_000, now: clock.now(), callerId: "caller_fuzzsb").1.token
            let writer = GroupCommitWriter(connection: db)
            writer.start()
            let administration = try SQLiteAdministration(path: path, writer: writer)
            var limits = RateLimitSettings()
            limits.devicePerHour = 1_000_000
            let limiter = RateLimiter(settings: limits, clock: clock)
            try limiter.refresh(from: administration)
            let authorizations = try SQLiteAuthorizationStore(path: path, writer: writer)
            let models = InsightModels(try? ModelRegistry.load(directory: ProcessInfo.processInfo.environment["INSIGHTD_MODELS_DIR"] ?? "models"))
            var configuration = APIConfiguration()
            configuration.credentialCacheSeconds = 60
            let readiness = Readiness()
            readiness.set(true)
            handler = InsightAPIHandler(APIDependencies(
                ledger: SQLiteLedger(writer: writer), credentials: try SQLiteCredentialDirectory(path: path),
                models: models, hashKeys: HashKeys(try HashKeyring(keys: [Array(repeating: 7, count: 32)])),
                clock: clock, readiness: readiness, limiter: limiter, administration: administration,
                authorizations: authorizations, denials: DenialIndex(), metrics: APIMetrics(registry: MetricsRegistry()),
                velocity: VelocityTracker(clock: clock), escalation: .defaults, configuration: configuration))
        } catch {
            fatalError("fuzz harness setup failed: \(error)")
        }
        // A few evaluations that exist, so labels and consumption reports can name them.
        let insight = #"{"type":"isLikelyBeingCoached","schemaVersion":1}"#
        for i in 0..<4 {
            let body = #"{"operationCategory":"payment","insights":[\#(insight),\#(insight)],"subject":{"account":"fuzz-\#(i)"},"interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":900,"type":"submit"}]}}"#
            let response = send("POST", "/v1/evaluations", body: Array(body.utf8))
            guard response.status == 200, case .object(let object)? = try? JSONParser.parse(response.body),
                  case .string(let event)? = object["eventId"], case .array(let insights)? = object["insights"] else {
                fatalError("fuzz harness: seeding an evaluation answered \(response.status)")
            }
            knownEventIds.append(event)
            for case .object(let item) in insights { if case .string(let id)? = item["insightId"] { knownInsightIds.append(id) } }
        }
    }

    /// A fresh value per call (for Idempotency-Key).
    func nextSequence() -> Int {
        sequence += 1
        return sequence
    }

    /// Sends one request through the handler and waits for its response.
    func send(_ method: String, _ path: String, body: [UInt8], headers extra: [(String, String)] = [],
              key: String? = nil) -> HTTPResponse {
        var headers: [(String, String)] = [("Authorization", "Bearer \(key ?? self.key)"), ("Content-Type", "application/json")]
        headers.append(contentsOf: extra)
        let request = HTTPRequest(method: method, path: path, headers: HTTPHeaders(headers), body: body)
        let done = DispatchSemaphore(value: 0)
        let box = ResponseBox()
        handler.handle(request, responder: HTTPResponder { response in
            box.response = response
            done.signal()
        })
        guard done.wait(timeout: .now() + 10) == .success, let response = box.response else {
            fatalError("no response within 10 s for \(method) \(path)")
        }
        return response
    }

    /// Checks what every answer must satisfy: a documented status, and for an error a
    /// problem+json body with a code; for a 5xx the input is a bug (the store is local and healthy).
    static func checkCommon(_ response: HTTPResponse, allowed: Set<Int>, context: String) {
        precondition(allowed.contains(response.status), "\(context): undocumented status \(response.status)")
        precondition(response.status < 500, "\(context): server error \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        guard response.status >= 400 else { return }
        precondition(response.headers["Content-Type"] == "application/problem+json", "\(context): error without problem+json")
        guard case .object(let problem)? = try? JSONParser.parse(response.body), case .string? = problem["code"] else {
            preconditionFailure("\(context): error body is not a problem with a code")
        }
    }
}

/// The harness's state directory, removed at exit.
nonisolated(unsafe) private var stateDirectory = ""

private final class ResponseBox: @unchecked Sendable {
    // @unchecked: written once by the responder before the semaphore is signalled, read after.
    var response: HTTPResponse?
}
