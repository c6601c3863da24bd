import Foundation

/// Why a request to insightd failed as a whole. Mapped from the RFC 9457 problem `code` the
/// service sends (never from its human-readable `detail`), or raised by the client itself for
/// transport failures and responses it cannot trust.
///
/// Insight-level failures are not thrown: they arrive per insight as ``InsightError``.
public enum EvaluationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request broke the API's schema (`contextInvalid`, 400/422). `field` names the
    /// offending input, e.g. `insights[1].schemaVersion`, `(body)`, `Idempotency-Key`, or
    /// `insightIdsUsed[0]`. Fix the request; retrying it unchanged cannot succeed.
    case contextInvalid(field: String?, detail: String)
    /// No API key, or one that is unknown or revoked (401).
    case unauthorized
    /// The API key lacks the role this endpoint needs (403 `forbidden`).
    case forbidden
    /// A production key sent the sandbox-only `Insight-Override` header (403
    /// `overrideNotAllowed`). Remove ``RequestOptions/insightOverride`` outside the sandbox.
    case overrideNotAllowed
    /// The subject switched insights off and the switch is in effect (403 `denied`). Proceed with
    /// your other risk checks.
    case denied
    /// Your caller is throttled (429). `retryAfter` is the service's advice, in seconds. The
    /// evaluator has already retried within its ``RetryPolicy`` when that was allowed.
    case rateLimitExceeded(retryAfter: TimeInterval?)
    /// The service failed or is overloaded (500/503, or any 5xx). With `retryAfter`, nothing was
    /// recorded and a later retry may succeed; the evaluator has already retried within its
    /// ``RetryPolicy``.
    case serverError(status: Int, retryAfter: TimeInterval?)
    /// No such evaluation for this caller and environment (404 `evaluationNotFound`), or no
    /// such endpoint (404 `notFound`: check the base URL).
    case notFound
    /// A different consumption report is already recorded for this evaluation (409
    /// `consumptionConflict`). The first report stands.
    case conflict
    /// The `Idempotency-Key` of a label submission was used before with a different body (422
    /// `idempotencyKeyReused`). Use a new key for a new batch.
    case idempotencyKeyReused
    /// The response does not follow the API contract (not JSON, members missing, an insight list
    /// that does not match the request). Do not use it.
    case unexpectedResponse(detail: String)
    /// The request did not complete: the host could not be reached, the connection was lost or
    /// timed out. `description` is the underlying error's description.
    case transport(description: String)
    /// The response is bound to another transaction than the one sent: its `requestId` differs.
    /// Do not trust it; it may have been injected or misrouted.
    case requestIDMismatch(sent: String, received: String?)
    /// The task was cancelled.
    case cancelled
    /// The answer's `Insight-Receipt` is missing or malformed, its head names a key the
    /// service's JWKS does not list or is not signed by it, the body does not lead to the head's
    /// root, the head does not follow the instance's head seen before, or the answer names
    /// another tenant or environment than expected: the answer must not be trusted. Not retried.
    case receiptInvalid(detail: String)
    /// A 4xx problem `code` without a case of its own in this client version (for example
    /// `payloadTooLarge`, `unsupportedMediaType`, or a code a later service version adds). An
    /// unknown code on a 5xx or 429 is reported as ``serverError(status:retryAfter:)`` or
    /// ``rateLimitExceeded(retryAfter:)``.
    case unknown(code: String, status: Int, detail: String)

    /// Whether the service said a retry may succeed: a 503 or 429 carrying `Retry-After`, or a
    /// transport failure. The evaluator already retries these within its ``RetryPolicy``.
    public var mayRetry: Bool {
        switch self {
        case .rateLimitExceeded(let retryAfter), .serverError(_, let retryAfter): return retryAfter != nil
        case .transport: return true
        default: return false
        }
    }

    /// A one-line description for logs.
    public var description: String {
        switch self {
        case .contextInvalid(let field, let detail): return "contextInvalid(\(field ?? "-")): \(detail)"
        case .unauthorized: return "unauthorized: the API key is missing, unknown or revoked"
        case .forbidden: return "forbidden: the API key lacks the role this endpoint needs"
        case .denied: return "denied: the subject switched insights off"
        case .overrideNotAllowed: return "overrideNotAllowed: Insight-Override is for sandbox keys only"
        case .rateLimitExceeded(let retryAfter): return "rateLimitExceeded" + Self.after(retryAfter)
        case .serverError(let status, let retryAfter): return "serverError(\(status))" + Self.after(retryAfter)
        case .notFound: return "notFound"
        case .conflict: return "conflict: a different consumption report is already recorded"
        case .idempotencyKeyReused: return "idempotencyKeyReused: the key was used with a different body"
        case .unexpectedResponse(let detail): return "unexpectedResponse: \(detail)"
        case .transport(let description): return "transport: \(description)"
        case .requestIDMismatch(let sent, let received):
            return "requestIDMismatch: sent \(sent), received \(received ?? "none")"
        case .cancelled: return "cancelled"
        case .receiptInvalid(let detail): return "receiptInvalid: \(detail)"
        case .unknown(let code, let status, let detail): return "\(code) (\(status)): \(detail)"
        }
    }

    private static func after(_ seconds: TimeInterval?) -> String {
        seconds.map { " (retry after \($0.formatted())s)" } ?? ""
    }
}

extension TimeInterval {
    fileprivate func formatted() -> String {
        self == rounded() ? String(Int(self)) : String(self)
    }
}

// MARK: - Mapping responses to errors

extension EvaluationError {
    /// The error a non-success response stands for. `body` is an RFC 9457 problem when the
    /// service produced the response; proxies may send anything, so the status decides then.
    static func from(status: Int, retryAfter: TimeInterval?, body: Data) -> EvaluationError {
        let problem = ProblemDetails(body)
        guard let code = problem?.code else {
            switch status {
            case 401: return .unauthorized
            case 429: return .rateLimitExceeded(retryAfter: retryAfter)
            case 500...599: return .serverError(status: status, retryAfter: retryAfter)
            default: return .unexpectedResponse(detail: "HTTP \(status) without a problem body")
            }
        }
        let detail = problem?.detail ?? ""
        switch code {
        case "contextInvalid": return .contextInvalid(field: problem?.field, detail: detail)
        case "unauthorized": return .unauthorized
        case "forbidden": return .forbidden
        case "denied": return .denied
        case "overrideNotAllowed": return .overrideNotAllowed
        case "rateLimitExceeded": return .rateLimitExceeded(retryAfter: retryAfter)
        case "serverError": return .serverError(status: status, retryAfter: retryAfter)
        case "evaluationNotFound", "notFound": return .notFound
        case "consumptionConflict": return .conflict
        case "idempotencyKeyReused": return .idempotencyKeyReused
        default:
            // A code this client does not know keeps the meaning of its status class, so that
            // retry advice on a 5xx or 429 is still followed.
            if (500...599).contains(status) { return .serverError(status: status, retryAfter: retryAfter) }
            if status == 429 { return .rateLimitExceeded(retryAfter: retryAfter) }
            return .unknown(code: code, status: status, detail: detail)
        }
    }

    /// The error a thrown URLSession error stands for.
    static func from(transportError error: any Error) -> EvaluationError {
        if error is CancellationError { return .cancelled }
        if let urlError = error as? URLError {
            if urlError.code == .cancelled { return .cancelled }
            return .transport(description: "\(urlError.code.name): \(urlError.localizedDescription)")
        }
        return .transport(description: String(describing: error))
    }

    /// Whether a transport failure is worth retrying: the connection could not be made, or was
    /// lost or timed out. TLS, URL and redirect failures are not.
    static func isRetryableTransport(_ error: any Error) -> Bool {
        guard let code = (error as? URLError)?.code else { return false }
        return [
            .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .networkConnectionLost,
            .notConnectedToInternet, .timedOut
        ].contains(code)
    }
}

extension URLError.Code {
    fileprivate var name: String {
        switch self {
        case .cannotConnectToHost: return "cannotConnectToHost"
        case .cannotFindHost: return "cannotFindHost"
        case .dnsLookupFailed: return "dnsLookupFailed"
        case .networkConnectionLost: return "networkConnectionLost"
        case .notConnectedToInternet: return "notConnectedToInternet"
        case .timedOut: return "timedOut"
        case .secureConnectionFailed: return "secureConnectionFailed"
        case .badServerResponse: return "badServerResponse"
        default: return "URLError(\(rawValue))"
        }
    }
}

/// The members of an RFC 9457 problem the client reads.
struct ProblemDetails: Decodable {
    var code: String?
    var status: Int?
    var detail: String?
    var field: String?

    init?(_ body: Data) {
        guard !body.isEmpty, let problem = try? JSONDecoder().decode(ProblemDetails.self, from: body) else { return nil }
        self = problem
    }
}

/// Parses `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3). Negative or
/// unparseable values are ignored.
func parseRetryAfter(_ value: String?, now: Date = Date()) -> TimeInterval? {
    guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
    if let seconds = Int(text) { return seconds >= 0 ? TimeInterval(seconds) : nil }
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
    guard let date = formatter.date(from: text) else { return nil }
    return max(0, date.timeIntervalSince(now))
}
