import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP plumbing the evaluator, its evaluations and the labeler share: authentication,
/// JSON bodies, problem mapping and the retry loop.
struct APIClient: Sendable {
    let baseURL: URL
    let apiKey: String
    let session: URLSession
    let retryPolicy: RetryPolicy
    /// Seconds each attempt may take unless the request's options say otherwise.
    static let defaultTimeout: TimeInterval = 30
    static let userAgent = "InsightClient/1.0 (Swift)"

    /// A successful (2xx) response.
    struct Response: Sendable {
        let status: Int
        let body: Data
        /// The value of `Insight-Receipt`, when the response carries one.
        var receipt: String? = nil
    }

    /// The URL of an API path; each segment is percent-encoded, so an id can never add a path
    /// segment or a query. A base URL with a path (behind a proxy) keeps it.
    func url(_ segments: [String]) throws(EvaluationError) -> URL {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        var text = baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        for segment in segments {
            guard let encoded = segment.addingPercentEncoding(withAllowedCharacters: allowed) else {
                throw .contextInvalid(field: "url", detail: "a path segment cannot be encoded")
            }
            text += "/" + encoded
        }
        guard let url = URL(string: text) else { throw .contextInvalid(field: "baseURL", detail: "not a valid URL") }
        return url
    }

    /// Sends a request, retrying within the policy, and returns the 2xx response or throws the
    /// mapped error of the last attempt. The same bytes are sent on every attempt.
    /// With `bypassCache`, no cache on the way (the URL session's, a proxy's) may answer instead
    /// of the service.
    func send(
        _ method: String, _ segments: [String], body: Data?, headers: [(String, String)] = [],
        bypassCache: Bool = false, options: RequestOptions
    ) async throws(EvaluationError) -> Response {
        var request = URLRequest(url: try url(segments))
        if bypassCache {
            request.cachePolicy = .reloadIgnoringLocalCacheData
            request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        }
        request.httpMethod = method
        request.timeoutInterval = options.timeout ?? Self.defaultTimeout
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json, application/problem+json", forHTTPHeaderField: "Accept")
        request.setValue(Self.userAgent, forHTTPHeaderField: "User-Agent")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = body
        }
        for (name, value) in headers + (try options.validatedHeaders()) {
            request.setValue(value, forHTTPHeaderField: name)
        }

        var attempts = 0
        var waited: TimeInterval = 0
        while true {
            attempts += 1
            let failure: EvaluationError
            var retryableTransport = false
            do {
                let (data, response) = try await session.data(for: request)
                guard let http = response as? HTTPURLResponse else {
                    throw EvaluationError.unexpectedResponse(detail: "not an HTTP response")
                }
                if (200...299).contains(http.statusCode) {
                    return Response(
                        status: http.statusCode, body: data,
                        receipt: http.value(forHTTPHeaderField: "Insight-Receipt"))
                }
                failure = EvaluationError.from(
                    status: http.statusCode,
                    retryAfter: parseRetryAfter(http.value(forHTTPHeaderField: "Retry-After")),
                    body: data)
            } catch let error as EvaluationError {
                throw error
            } catch {
                failure = EvaluationError.from(transportError: error)
                retryableTransport = EvaluationError.isRetryableTransport(error)
            }
            guard
                let delay = retryPolicy.delay(
                    after: failure, retryableTransport: retryableTransport,
                    attemptsMade: attempts, waited: waited)
            else { throw failure }
            do {
                try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
            } catch {
                throw .cancelled
            }
            waited += delay
        }
    }

    /// A JSON body.
    static func encode(_ value: some Encodable) throws(EvaluationError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return try encoder.encode(value) } catch {
            throw .contextInvalid(field: "(body)", detail: "cannot be encoded as JSON: \(error)")
        }
    }

    /// A decoded JSON response body.
    static func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws(EvaluationError) -> T {
        do { return try JSONDecoder().decode(type, from: data) } catch {
            throw .unexpectedResponse(detail: "the body does not match the API: \(error)")
        }
    }
}

/// Parses the service's timestamps (`2026-12-02T10:00:00.123Z`).
func parseTimestamp(_ text: String) -> Date? {
    if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
    return try? Date(text, strategy: Date.ISO8601FormatStyle())
}
