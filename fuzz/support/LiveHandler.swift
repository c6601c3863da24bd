// Shared by the api-* fuzz targets: the daemon as its composition root builds it
// (`InsightService.start`: SQLite store in a temporary state directory, group-commit writer, rate
// limiter, models from models/), its API handler called in-process with an HTTPResponder that
// hands the response back.
import Dispatch
import Foundation
import HTTPServer
import InsightAPI
import InsightApp
import InsightDomain
import JSON

final class LiveHandler: @unchecked Sendable {
    // @unchecked: set once in init, then only read; libFuzzer calls the target from one thread.
    let service: InsightService
    var handler: InsightAPIHandler { service.handler }
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
            stateDirectory = directory
            atexit { try? FileManager.default.removeItem(atPath: stateDirectory) }
            var settings = Settings()
            settings.stateDirectory = directory
            settings.listenHost = "127.0.0.1"
            settings.listenPort = 0
            settings.metricsListen = nil
            settings.threads = 1
            settings.modelsDirectory = ProcessInfo.processInfo.environment["INSIGHTD_MODELS_DIR"] ?? "models"
            settings.credentialCacheSeconds = 60
            settings.devicePerHour = 1_000_000
            settings.logLevel = .error
            let registration = try StoreBackend.registration(.sqlite(stateDirectory: directory), now: SystemClock().now())
            let all: Set<Role> = [.evaluate, .labels, .admin]
            key = try registration.create(name: "fuzz", tenant: "default", environment: .production, roles: all,
                                          rate: 1_000_000, burst: 1_000_000, now: SystemClock().now(),
                                          callerId: "caller_fuzz").1.token
            sandboxKey = try registration.create(name: "fuzz-sandbox", tenant: "default", environment: .sandbox, roles: all,
                                                 rate: 1_000_000, burst: 1_000_000, now: SystemClock().now(),
                                                 callerId: "caller_fuzzsb").1.token
            service = try InsightService.start(settings: settings,
                                               logger: Logger(minimumLevel: .error, sink: FileHandle(forWritingAtPath: "/dev/null")!))
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
