import Foundation

/// When the client retries a failed request. It retries only where the failure says a retry may
/// succeed:
///
/// - a `503` or `429` carrying `Retry-After` (the service recorded nothing), after waiting the
///   advised time;
/// - a transport failure (host unreachable, connection lost, timeout), after a short backoff
///   that doubles each time.
///
/// It never retries validation errors (`contextInvalid`), authentication errors, conflicts, or
/// a `5xx` without `Retry-After`. Retries are bounded by ``maxAttempts`` and by
/// ``maxTotalDelay``: a wait that would go beyond the budget ends the retries and the last
/// error is thrown.
///
/// An evaluation retried after a transport failure is sent again byte for byte, with the same
/// `requestId`. If the first attempt had in fact reached the service, the service answers the
/// retry with that first evaluation (`Idempotent-Replayed: true`): one evaluation, one report.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in total, the first included (1 means never retry).
    public var maxAttempts: Int
    /// The most time spent waiting between attempts, in seconds, all waits together.
    public var maxTotalDelay: TimeInterval
    /// The first wait after a transport failure, in seconds (doubled for each later one);
    /// `nil` means transport failures are not retried.
    public var transportRetryDelay: TimeInterval?

    /// Creates a policy.
    public init(maxAttempts: Int, maxTotalDelay: TimeInterval, transportRetryDelay: TimeInterval? = 0.25) {
        self.maxAttempts = max(1, maxAttempts)
        self.maxTotalDelay = max(0, maxTotalDelay)
        self.transportRetryDelay = transportRetryDelay.map { max(0, $0) }
    }

    /// Up to 3 attempts and 10 seconds of waiting; transport failures retried after 0.25 s, then 0.5 s.
    public static let `default` = RetryPolicy(maxAttempts: 3, maxTotalDelay: 10, transportRetryDelay: 0.25)

    /// One attempt: every failure is thrown at once.
    public static let never = RetryPolicy(maxAttempts: 1, maxTotalDelay: 0, transportRetryDelay: nil)

    /// The wait before the next attempt, or `nil` to give up and throw `error`.
    /// - Parameters:
    ///   - error: the failure of the attempt just made.
    ///   - retryableTransport: whether a `.transport` failure was one worth retrying.
    ///   - attemptsMade: attempts made so far (at least 1).
    ///   - waited: seconds already spent waiting between attempts.
    func delay(
        after error: EvaluationError, retryableTransport: Bool, attemptsMade: Int,
        waited: TimeInterval
    ) -> TimeInterval? {
        guard attemptsMade < maxAttempts else { return nil }
        let delay: TimeInterval
        switch error {
        case .serverError(_, let retryAfter?), .rateLimitExceeded(let retryAfter?):
            delay = retryAfter
        case .transport where retryableTransport:
            guard let base = transportRetryDelay else { return nil }
            delay = base * pow(2, Double(attemptsMade - 1))
        default:
            return nil
        }
        guard waited + delay <= maxTotalDelay else { return nil }
        return delay
    }
}

/// Options for a single request.
public struct RequestOptions: Sendable, Hashable {
    /// Extra headers to send. `Authorization`, `Content-Type`, `Content-Length`, `Host` and
    /// `Idempotency-Key` are set by the client and cannot be given here.
    public var additionalHeaders: [String: String]
    /// The timeout of each attempt, in seconds; `nil` uses the client's default.
    public var timeout: TimeInterval?

    /// Creates options.
    public init(additionalHeaders: [String: String] = [:], timeout: TimeInterval? = nil) {
        self.additionalHeaders = additionalHeaders
        self.timeout = timeout
    }

    /// **Sandbox only.** The `Insight-Override` header, which makes a sandbox evaluation return
    /// forced outcomes so you can test every branch of your decision logic, e.g.
    /// `isLikelyBeingCoached=high`, `isLikelyBeingCoached=error:insightEvaluationFailed` or
    /// `evaluation=error:rateLimitExceeded` (comma-separated; syntax in `docs/api.md`). A
    /// production key that sends it is refused; never set it in production code paths.
    public var insightOverride: String? {
        get { additionalHeaders.first { $0.key.lowercased() == "insight-override" }?.value }
        set {
            additionalHeaders = additionalHeaders.filter { $0.key.lowercased() != "insight-override" }
            if let newValue { additionalHeaders["Insight-Override"] = newValue }
        }
    }

    /// **Sandbox only.** Options carrying an `Insight-Override` header; see ``insightOverride``.
    public static func insightOverride(_ value: String) -> RequestOptions {
        var options = RequestOptions()
        options.insightOverride = value
        return options
    }

    /// Header names the client owns.
    static let reservedHeaders: Set<String> = [
        "authorization", "content-type", "content-length", "host",
        "idempotency-key", "transfer-encoding", "connection"
    ]

    /// The extra headers after checking them: reserved names, names that are not HTTP tokens, and
    /// values with control characters are refused before anything is sent.
    func validatedHeaders() throws(EvaluationError) -> [(String, String)] {
        let token = CharacterSet(charactersIn: "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        var headers: [(String, String)] = []
        for (name, value) in additionalHeaders.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(token.contains) else {
                throw .contextInvalid(field: "options.additionalHeaders", detail: "a header name is not an HTTP token")
            }
            guard !Self.reservedHeaders.contains(name.lowercased()) else {
                throw .contextInvalid(field: "options.additionalHeaders", detail: "\(name) is set by the client")
            }
            guard value.unicodeScalars.allSatisfy({ $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }) else {
                throw .contextInvalid(field: "options.additionalHeaders", detail: "the value of \(name) has control characters")
            }
            headers.append((name, value))
        }
        return headers
    }
}
