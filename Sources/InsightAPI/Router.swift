/// The API's routes. Matching is on exact path segments; ids in paths are opaque strings.
enum Route: Equatable, Sendable {
    case evaluations
    case consumption(eventId: String)
    case labels
    case insights
    case livez
    case readyz

    /// The route for `path`, or nil (404).
    static func match(_ path: String) -> Route? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.first == "" else { return nil }
        switch segments.dropFirst().map(String.init) {
        case ["v1", "evaluations"]: return .evaluations
        case let s where s.count == 4 && s[0] == "v1" && s[1] == "evaluations" && s[3] == "consumption" && !s[2].isEmpty:
            return .consumption(eventId: s[2])
        case ["v1", "labels"]: return .labels
        case ["v1", "insights"]: return .insights
        case ["livez"]: return .livez
        case ["readyz"]: return .readyz
        default: return nil
        }
    }

    /// The methods the route answers (HEAD wherever GET is).
    var allowedMethods: [String] {
        switch self {
        case .evaluations, .consumption, .labels: return ["POST"]
        case .insights, .livez, .readyz: return ["GET", "HEAD"]
        }
    }

    /// The route's name for logs and metrics: never contains an id.
    var name: String {
        switch self {
        case .evaluations: return "/v1/evaluations"
        case .consumption: return "/v1/evaluations/{eventId}/consumption"
        case .labels: return "/v1/labels"
        case .insights: return "/v1/insights"
        case .livez: return "/livez"
        case .readyz: return "/readyz"
        }
    }
}
