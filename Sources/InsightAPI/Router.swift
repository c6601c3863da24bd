import InsightDomain
import InsightServices

/// The API's routes. Matching is on exact path segments; ids in paths are opaque strings.
enum Route: Equatable, Sendable {
    case evaluations
    case consumption(eventId: String)
    case labels
    case authorization
    case authorizationQuery
    case subjectTransparency
    case subjectErasure
    case insights
    case livez
    case readyz
    case signingKeys
    case receiptHeads
    case adminCallers
    case adminCaller(callerId: String)
    case adminRateLimit(callerId: String)
    case adminRateLimitReset(callerId: String)
    case adminDecisions
    case adminModelPerformance
    case adminRateLimits
    case adminCallerKeys(callerId: String)
    case adminKeyRevoke(callerId: String, keyId: String)
    case adminModels
    case adminVelocity
    case adminHealth
    case adminInterventions
    case adminInterventionRetire(templateId: String, version: String)
    /// A file of the admin console under `/console/` (`""`: its index); nil: `/console` itself,
    /// redirected to `/console/`.
    case console(file: String?)

    /// The route for `path`, or nil (404).
    static func match(_ path: String) -> Route? {
        // A route without an id has its path as its name: compared whole. Splitting every path
        // into segment strings cost more than anything else in routing an evaluation.
        if let route = fixed.first(where: { $0.name == path }) { return route }
        return matchWithId(path)
    }

    /// The routes without an id.
    private static let fixed: [Route] = [
        .evaluations, .labels, .authorization, .authorizationQuery, .subjectTransparency, .subjectErasure, .insights, .livez,
        .readyz, .signingKeys, .receiptHeads, .adminCallers, .adminDecisions, .adminModelPerformance, .adminRateLimits,
        .adminModels, .adminVelocity, .adminHealth, .adminInterventions
    ]

    private static func matchWithId(_ path: String) -> Route? {
        if path == "/console" { return .console(file: nil) }
        if path.hasPrefix("/console/") { return .console(file: String(path.dropFirst("/console/".count))) }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.first == "" else { return nil }
        switch segments.dropFirst().map(String.init) {
        case let s where s.count == 4 && s[0] == "v1" && s[1] == "evaluations" && s[3] == "consumption" && !s[2].isEmpty:
            return .consumption(eventId: s[2])
        case let s where s.count == 4 && s[0] == "admin" && s[1] == "v1" && s[2] == "callers" && !s[3].isEmpty:
            return .adminCaller(callerId: s[3])
        case let s
        where s.count == 5 && s[0] == "admin" && s[1] == "v1" && s[2] == "callers" && !s[3].isEmpty
            && s[4] == "rate-limit":
            return .adminRateLimit(callerId: s[3])
        case let s
        where s.count == 6 && s[0] == "admin" && s[1] == "v1" && s[2] == "callers" && !s[3].isEmpty
            && s[4] == "rate-limit" && s[5] == "reset":
            return .adminRateLimitReset(callerId: s[3])
        case let s
        where s.count == 5 && s[0] == "admin" && s[1] == "v1" && s[2] == "callers" && !s[3].isEmpty
            && s[4] == "keys":
            return .adminCallerKeys(callerId: s[3])
        case let s
        where s.count == 7 && s[0] == "admin" && s[1] == "v1" && s[2] == "callers" && !s[3].isEmpty
            && s[4] == "keys" && !s[5].isEmpty && s[6] == "revoke":
            return .adminKeyRevoke(callerId: s[3], keyId: s[5])
        case let s
        where s.count == 7 && s[0] == "admin" && s[1] == "v1" && s[2] == "interventions" && !s[3].isEmpty
            && s[4] == "versions" && !s[5].isEmpty && s[6] == "retire":
            return .adminInterventionRetire(templateId: s[3], version: s[5])
        default: return nil
        }
    }

    /// The methods the route answers (HEAD wherever GET is).
    var allowedMethods: [String] {
        switch self {
        case .evaluations, .consumption, .labels, .adminRateLimitReset, .authorizationQuery, .subjectTransparency,
            .subjectErasure, .adminKeyRevoke, .adminInterventionRetire:
            return ["POST"]
        case .authorization: return ["PUT"]
        case .insights, .livez, .readyz, .signingKeys, .receiptHeads, .adminCallers, .adminRateLimit, .adminDecisions,
            .adminModelPerformance, .adminRateLimits, .adminCallerKeys, .adminModels, .adminVelocity, .adminHealth,
            .console:
            return ["GET", "HEAD"]
        case .adminCaller: return ["GET", "HEAD", "PATCH"]
        case .adminInterventions: return ["GET", "HEAD", "POST"]
        }
    }

    /// Who may call a route.
    enum Access: Equatable, Sendable {
        /// No key: probes, the signing keys, the console's files.
        case open
        /// Any valid key, whatever its roles.
        case anyCaller
        /// A valid key holding this role.
        case role(Role)
        /// A valid key holding one of these roles (the first is named when it holds none).
        case anyRole([Role])
    }

    /// Who may call the route: `InsightAPIHandler.authenticate` checks every request of it
    /// against this, before and after `Expect: 100-continue`.
    var access: Access {
        switch self {
        // The console's files are public (they hold no data; every value comes from the admin API
        // with the key the person signs in with).
        case .livez, .readyz, .signingKeys, .console: return .open
        case .insights: return .anyCaller
        case .receiptHeads: return .anyRole([.evaluate, .admin])
        case .evaluations, .consumption, .authorization, .authorizationQuery, .subjectTransparency: return .role(.evaluate)
        case .subjectErasure: return .role(.admin)
        case .labels: return .role(.labels)
        case .adminCallers, .adminCaller, .adminRateLimit, .adminRateLimitReset, .adminDecisions, .adminModelPerformance,
            .adminRateLimits, .adminCallerKeys, .adminKeyRevoke, .adminModels, .adminVelocity, .adminHealth,
            .adminInterventions, .adminInterventionRetire:
            return .role(.admin)
        }
    }

    /// The tokens of the caller's quota (`QuotaGate`) a request costs, taken after
    /// authentication and before the body is read (0: none): the writes (docs/rate-limits.md "The caller quota"), and
    /// every look-up or change of a subject, so that a key cannot probe who is known faster than
    /// its rate. A page of receipt heads costs one, so that no key reads the log faster than its
    /// rate. A transparency page costs more: it reads up to 500 evaluations. An evaluation
    /// costs one too, taken by its use case with the rest it asks of the rate limits and velocity
    /// (one round trip to Redis), or at its refusal before that. Of the admin API, a rate-limit
    /// reset costs the admin one (it gives back no token, docs/rate-limits.md "Resets", but it
    /// writes), and a model-performance report as much as a transparency page: it reads a period.
    var quotaCost: Int {
        switch self {
        case .labels, .authorization, .authorizationQuery, .subjectErasure, .adminRateLimitReset, .receiptHeads: return 1
        case .subjectTransparency: return Self.transparencyPageCost
        case .adminModelPerformance: return Self.modelPerformanceCost
        default: return 0
        }
    }

    /// Whether the route's answers say who a caller or a person is (the admin API, a subject's
    /// history, opt-out or erasure): sent with `Cache-Control: no-store`, so that no browser,
    /// proxy or console tab keeps them after the person who asked has gone.
    var answersAreConfidential: Bool {
        switch self {
        case .authorization, .authorizationQuery, .subjectTransparency, .subjectErasure: return true
        default: return access == .role(.admin)
        }
    }

    /// The tokens a transparency page costs (at most the caller's burst).
    static let transparencyPageCost = 5

    /// The tokens a model-performance report costs (at most the caller's burst).
    static let modelPerformanceCost = 5

    /// The route's name for logs and metrics: never contains an id.
    var name: String {
        switch self {
        case .evaluations: return "/v1/evaluations"
        case .consumption: return "/v1/evaluations/{eventId}/consumption"
        case .labels: return "/v1/labels"
        case .authorization: return "/v1/authorization"
        case .authorizationQuery: return "/v1/authorization/query"
        case .subjectTransparency: return "/v1/subjects/transparency"
        case .subjectErasure: return "/v1/subjects/erasure"
        case .insights: return "/v1/insights"
        case .livez: return "/livez"
        case .readyz: return "/readyz"
        case .signingKeys: return "/v1/signing-keys"
        case .receiptHeads: return "/v1/receipts/heads"
        case .adminCallers: return "/admin/v1/callers"
        case .adminCaller: return "/admin/v1/callers/{callerId}"
        case .adminRateLimit: return "/admin/v1/callers/{callerId}/rate-limit"
        case .adminRateLimitReset: return "/admin/v1/callers/{callerId}/rate-limit/reset"
        case .adminDecisions: return "/admin/v1/decisions"
        case .adminModelPerformance: return "/admin/v1/model-performance"
        case .adminRateLimits: return "/admin/v1/rate-limits"
        case .adminCallerKeys: return "/admin/v1/callers/{callerId}/keys"
        case .adminKeyRevoke: return "/admin/v1/callers/{callerId}/keys/{keyId}/revoke"
        case .adminModels: return "/admin/v1/models"
        case .adminVelocity: return "/admin/v1/velocity"
        case .adminHealth: return "/admin/v1/health"
        case .adminInterventions: return "/admin/v1/interventions"
        case .adminInterventionRetire: return "/admin/v1/interventions/{templateId}/versions/{version}/retire"
        case .console: return "/console/"
        }
    }
}
