import Dispatch
import HTTPServer
import InsightDomain
import InsightServices
import JSON
import Synchronization

/// Whether the service can take traffic: false until migrations ran and models loaded,
/// and again once a drain has begun, or while the store does not answer (a shared PostgreSQL:
/// the load balancer then sends nothing the instance could only refuse). Velocity's state is
/// reported beside it: the service takes traffic while velocity's counts are still being
/// rebuilt, without escalating by them.
public final class Readiness: Sendable {
    private let state = Atomic<Bool>(false)
    private let storeReachable: @Sendable () -> Bool
    private let velocityRebuilding: @Sendable () -> Bool

    public init(
        storeReachable: @escaping @Sendable () -> Bool = { true },
        velocityRebuilding: @escaping @Sendable () -> Bool = { false }
    ) {
        self.storeReachable = storeReachable
        self.velocityRebuilding = velocityRebuilding
    }

    public var isReady: Bool { state.load(ordering: .acquiring) }

    /// The store answers now.
    public var isStoreReachable: Bool { storeReachable() }

    /// Velocity's counts are complete (escalation by velocity is on).
    public var isVelocityReady: Bool { !velocityRebuilding() }

    public func set(_ ready: Bool) { state.store(ready, ordering: .releasing) }
}

/// Everything the API needs, injected by the composition root.
public struct APIDependencies: Sendable {
    public var useCases: UseCases
    public var readiness: Readiness
    public var metrics: APIMetrics
    /// The keys that sign every `200` of `POST /v1/evaluations` and that `GET /v1/signing-keys`
    /// publishes; nil: answers go unsigned and the JWKS is empty (handlers built for one test).
    public var signingKeys: SigningKeys?
    /// Called once per answered request with its log-safe summary.
    public var onRequest: (@Sendable (RequestSummary) -> Void)?

    public init(
        useCases: UseCases, readiness: Readiness, metrics: APIMetrics, signingKeys: SigningKeys? = nil,
        onRequest: (@Sendable (RequestSummary) -> Void)? = nil
    ) {
        self.useCases = useCases
        self.readiness = readiness
        self.metrics = metrics
        self.signingKeys = signingKeys
        self.onRequest = onRequest
    }
}

/// What a log line may say about a request: no body, no identifier, no query.
public struct RequestSummary: Sendable {
    /// The W3C trace id of the request (from `traceparent`, or generated): joins log lines
    /// across services without naming anyone.
    public var traceId: String
    public var method: String
    public var route: String
    public var status: Int
    public var code: String?
    public var callerId: String?
    public var durationSeconds: Double
}

/// The HTTP face of insightd: routing, authentication headers, decoding and rendering; the
/// decisions are the use cases'.
public final class InsightAPIHandler: HTTPHandler {
    let dependencies: APIDependencies
    let useCases: UseCases

    public init(_ dependencies: APIDependencies) {
        self.dependencies = dependencies
        self.useCases = dependencies.useCases
    }

    public func response(for error: HTTPProtocolError) -> HTTPResponse {
        Problem.from(error).response
    }

    public func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        // Durations on the monotonic clock: the wall clock can be stepped (NTP), and in whole
        // milliseconds it gave most requests 0 ms.
        let started = DispatchTime.now().uptimeNanoseconds
        guard let route = Route.match(request.path) else {
            let problem = Problem(404, .notFound, "There is no resource at this path.")
            return finish(
                problem.response, request: request, route: "(unmatched)", caller: nil, code: problem.code,
                started: started, responder: responder)
        }
        guard route.allowedMethods.contains(request.method) else {
            var problem = Problem(405, .methodNotAllowed, "This resource answers \(route.allowedMethods.joined(separator: ", ")).")
            problem.headers = [("Allow", route.allowedMethods.joined(separator: ", "))]
            return finish(
                problem.response, request: request, route: route.name, caller: nil, code: problem.code,
                started: started, responder: responder)
        }
        let exchange = Exchange(handler: self, request: request, route: route, started: started, responder: responder)
        do {
            // Who calls (`Route.access`) and what it costs of its quota (`Route.quotaCost`), for
            // every route in one place, before the body is read.
            if let caller = try authenticate(request, route: route) {
                exchange.caller = caller
                let cost = route.quotaCost
                if cost > 0 { exchange.quota = try useCases.quota.admit(caller, cost: cost) }
            }
            switch route {
            case .livez: exchange.send(Self.json(200, .object(["status": .string("ok")])))
            case .readyz: readyz(exchange)
            case .signingKeys: signingKeys(exchange)
            case .receiptHeads: try receiptHeads(exchange)
            case .insights: try insights(exchange)
            case .evaluations: try evaluate(exchange)
            case .consumption(let eventId): try consume(exchange, eventId: eventId)
            case .labels: try labels(exchange)
            case .authorization: try putAuthorization(exchange)
            case .authorizationQuery: try queryAuthorization(exchange)
            case .subjectTransparency: try subjectTransparency(exchange)
            case .subjectErasure: try subjectErasure(exchange)
            case .adminCallers: try adminCallers(exchange)
            case .adminCaller(let id): try adminCaller(exchange, callerId: id)
            case .adminRateLimit(let id): try adminRateLimit(exchange, callerId: id)
            case .adminRateLimitReset(let id): try adminRateLimitReset(exchange, callerId: id)
            case .adminDecisions: try adminDecisions(exchange)
            case .adminModelPerformance: try modelPerformance(exchange)
            case .adminRateLimits: try adminRateLimits(exchange)
            case .adminCallerKeys(let id): try adminCallerKeys(exchange, callerId: id)
            case .adminKeyRevoke(let id, let keyId): try adminKeyRevoke(exchange, callerId: id, keyId: keyId)
            case .adminModels: adminModels(exchange)
            case .adminVelocity: try adminVelocity(exchange)
            case .adminHealth: adminHealth(exchange)
            case .adminInterventions: try adminInterventions(exchange)
            case .adminInterventionRetire(let id, let version):
                try adminInterventionRetire(exchange, templateId: id, version: version)
            case .console(let file): console(exchange, file: file)
            }
        } catch {
            exchange.fail(error)
        }
    }

    func finish(
        _ response: HTTPResponse, request: HTTPRequest, route: String, caller: String?, code: ProblemCode?,
        started: UInt64, responder: HTTPResponder
    ) {
        // Counted and logged before it is sent (the send may reach the socket at once): a client
        // holding an answer can rely on its request being in the metrics and the log.
        let seconds = Double(DispatchTime.now().uptimeNanoseconds &- started) / 1e9
        dependencies.metrics.observe(route: route, method: request.method, status: response.status, seconds: seconds)
        dependencies.onRequest?(
            RequestSummary(
                traceId: TraceContext.traceId(request.headers["traceparent"]), method: request.method, route: route,
                status: response.status, code: code?.rawValue, callerId: caller,
                durationSeconds: seconds))
        responder.send(response)
    }

    func readyz(_ exchange: Exchange) {
        let readiness = dependencies.readiness
        if !readiness.isReady {
            exchange.fail(Problem(503, .serverError, "Not ready: starting up or draining."))
        } else if !readiness.isStoreReachable {
            exchange.fail(Problem(503, .serverError, "Not ready: the store is unreachable."))
        } else {
            exchange.send(
                Self.json(
                    200,
                    .object([
                        "status": .string("ready"),
                        "velocity": .string(readiness.isVelocityReady ? "ready" : "rebuilding")
                    ])))
        }
    }

    /// Requires a JSON body (415 otherwise) and parses it (400 when it is not one JSON object).
    func jsonBody(_ request: HTTPRequest) throws(Problem) -> JSONValue {
        try Problem.parseBody(try jsonBytes(request))
    }

    /// The body, after checking that it is declared JSON (415 otherwise).
    func jsonBytes(_ request: HTTPRequest) throws(Problem) -> [UInt8] {
        guard let contentType = request.headers["Content-Type"], Self.isJSON(contentType) else {
            throw Problem(415, .unsupportedMediaType, "Send the body as 'Content-Type: application/json'.")
        }
        return request.body
    }

    static func isJSON(_ contentType: String) -> Bool {
        // The value nearly every client sends, compared as bytes first: the general reading
        // below splits, trims and lowercases Substrings, which costs far more.
        if contentType.equalsIgnoringASCIICase("application/json") { return true }
        let parts = contentType.split(separator: ";")
        guard let media = parts.first?.trimmingOWS().lowercased() else { return false }
        guard media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json")) else { return false }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingOWS().lowercased() == "charset" {
                let charset = pair[1].trimmingOWS().lowercased().replacingQuotes()
                if charset != "utf-8" && charset != "utf8" { return false }
            }
        }
        return true
    }

    static func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> HTTPResponse {
        json(status, bytes: JSONWriter.bytes(value), headers: headers)
    }

    /// A JSON answer already written (`JSONObjectWriter`).
    static func json(_ status: Int, bytes: [UInt8], headers: [(String, String)] = []) -> HTTPResponse {
        var h = HTTPHeaders()
        h.reserveCapacity(1 + headers.count)
        h.add("Content-Type", "application/json")
        for (name, value) in headers { h.add(name, value) }
        return HTTPResponse(status: status, headers: h, body: bytes)
    }
}

/// One request in flight: answers it once, with its log summary.
///
/// A class: the store's completion captures it, and as a struct every capture and copy
/// retained each string and array of the request (about 36 reference counts per evaluation).
final class Exchange: @unchecked Sendable {
    // @unchecked: `caller` and `quota` are set once, on the loop thread, before the endpoint
    // runs; completions that read them reach another thread only through the writer's and the
    // loop's locked queues, which order those writes before their reads.
    let handler: InsightAPIHandler
    let request: HTTPRequest
    let route: Route
    /// When handling began (`DispatchTime` uptime nanoseconds), for the request's duration.
    let started: UInt64
    let responder: HTTPResponder
    /// The authenticated caller (nil on open routes).
    var caller: Caller?
    /// The caller's quota after this request's token (routes that cost one).
    var quota: QuotaStatus?

    init(handler: InsightAPIHandler, request: HTTPRequest, route: Route, started: UInt64, responder: HTTPResponder) {
        self.handler = handler
        self.request = request
        self.route = route
        self.started = started
        self.responder = responder
    }

    /// Sends `response`, with the caller's quota after this request's tokens (`RateLimit`,
    /// `RateLimit-Policy`) where the route took some, and `Cache-Control: no-store` where the
    /// route's answers are confidential (`Route.answersAreConfidential`).
    func send(_ response: HTTPResponse, code: ProblemCode? = nil) {
        var response = response
        if let quota { for (name, value) in Throttling.headers(quota) { response.headers.add(name, value) } }
        if route.answersAreConfidential { response.headers.add("Cache-Control", "no-store") }
        handler.finish(
            response, request: request, route: route.name, caller: caller?.callerId, code: code,
            started: started, responder: responder)
    }

    /// The caller of a route that is not open.
    func authenticated() throws(Problem) -> Caller {
        // Nil only if an open route's endpoint asked: a mistake of this code, not the client's.
        guard let caller else { throw Problem(500, .serverError, "An unexpected error occurred; it was logged.") }
        return caller
    }

    /// Continues a use case on the loop thread serving this request once its store has answered:
    /// the writer thread only commits, and what follows (metrics, velocity, the answer, its log
    /// line) runs on the loops, in parallel.
    var resume: Resume {
        let responder = self.responder
        return { work in responder.runOnConnectionThread(work) }
    }

    /// Answers a use case's completion: `success` renders the value, a rejection its problem.
    func complete<T>(_ result: Result<T, Rejection>, _ success: (T) -> HTTPResponse) {
        switch result {
        case .success(let value): send(success(value))
        case .failure(let rejection): fail(rejection)
        }
    }

    /// Answers with the problem `error` describes; anything unexpected is a 500 without details.
    func fail(_ error: any Error) {
        let problem =
            (error as? Problem) ?? (error as? Rejection).map(Problem.init)
            ?? Problem(500, .serverError, "An unexpected error occurred; it was logged.")
        send(problem.response, code: problem.code)
    }
}

extension String {
    func replacingQuotes() -> String { filter { $0 != "\"" } }
}
