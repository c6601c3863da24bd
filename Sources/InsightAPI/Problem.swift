import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// An RFC 9457 problem: the one shape every error of the API takes. `code` is the stable,
/// machine-readable name clients branch on; `detail` explains this occurrence to a human and
/// never echoes caller-supplied values (but for the plain name of an unknown member). Neither
/// `detail` nor `field` is ever logged: the request line carries `code` only.
public struct Problem: Error, Sendable, Equatable {
    public var status: Int
    public var code: ProblemCode
    public var detail: String
    /// The offending request field, as a path like `insights[1].schemaVersion`: names of the
    /// API's schema and positions, and of names the caller made up only a plain one
    /// (`JSONMemberName.isPlain`) of an unknown member; see `unknownMember`.
    public var field: String?
    /// Extra response headers (Allow, Retry-After, WWW-Authenticate).
    public var headers: [(String, String)] = []
    /// Extra members of the problem object.
    public var extensions: JSONObject = JSONObject()

    public init(_ status: Int, _ code: ProblemCode, _ detail: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.detail = detail
        self.field = field
    }

    public static func == (lhs: Problem, rhs: Problem) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.detail == rhs.detail && lhs.field == rhs.field
    }

    /// A request that is well-formed HTTP but not an acceptable body: 400 when the body is not
    /// the JSON object expected at all, 422 when a field breaks the schema.
    public static func invalid(_ field: String, _ detail: String) -> Problem {
        Problem(422, .contextInvalid, detail, field: field)
    }

    /// A member called `name` that the closed schema of the object at `path` (empty: the body)
    /// does not know, at `position` (from 0) among the object's members. A plain name
    /// (`JSONMemberName.isPlain`, such as a misspelt or a wrongly nested member) is named, with
    /// its path; any other may carry anything (a value sent as a name), so then the problem
    /// names the object and the position. Both list the known fields.
    static func unknownMember(_ name: String, of path: String, position: Int, known: [String]) -> Problem {
        let known = known.joined(separator: ", ")
        guard JSONMemberName.isPlain(name) else {
            return invalid(
                path.isEmpty ? "(body)" : path,
                "has a member that is not a known field (member \(position + 1), counting from 1); the known fields are \(known)")
        }
        return invalid(
            ObjectReader.join(path, name),
            "'\(name)' is not a known field of \(path.isEmpty ? "the body" : path); the known fields are \(known)")
    }

    /// The problem as an HTTP response.
    public var response: HTTPResponse {
        var object = JSONObject()
        object.append("type", .string("urn:insightd:problem:\(code.rawValue)"))
        object.append("title", .string(code.title))
        object.append("status", .number(Double(status)))
        object.append("code", .string(code.rawValue))
        object.append("detail", .string(detail))
        if let field { object.append("field", .string(field)) }
        for member in extensions.members { object.append(member.key, member.value) }
        var headers = HTTPHeaders([("Content-Type", "application/problem+json")])
        for (name, value) in self.headers { headers.add(name, value) }
        return HTTPResponse(status: status, headers: headers, body: JSONWriter.bytes(.object(object)))
    }
}

/// The stable problem codes. Each is documented in the OpenAPI document and docs/errors.
public enum ProblemCode: String, Sendable, CaseIterable {
    /// The body or a field of it is invalid (400 unparseable, 422 schema).
    case contextInvalid
    /// No credential, or one that is unknown or revoked (401).
    case unauthorized
    /// The credential lacks the role this endpoint needs (403).
    case forbidden
    /// The subject switched insights off (403).
    case denied
    /// A production credential sent the sandbox-only `Insight-Override` header (403).
    case overrideNotAllowed
    /// No such route (404).
    case notFound
    /// No evaluation with that id for this caller and environment (404).
    case evaluationNotFound
    /// No caller with that id (404, admin API).
    case callerNotFound
    /// The caller has no key with that id (404, admin API).
    case keyNotFound
    /// The route exists but not for this method (405).
    case methodNotAllowed
    /// A different consumption report was already stored for the evaluation (409).
    case consumptionConflict
    /// A consumption report names a template that is not in the catalogue of the caller's
    /// tenant and environment (422).
    case interventionTemplateUnknown
    /// A consumption report's intervention is of another kind than the template it names (422).
    case interventionKindMismatch
    /// A consumption report names a template retired before the intervention was shown (422).
    case interventionTemplateRetired
    /// A time of a consumption report's intervention lies before the evaluation or after the
    /// report, or a hold ends before it starts (422).
    case interventionTimeInvalid
    /// No catalogue entry with that id and version (404, admin API).
    case interventionTemplateNotFound
    /// A catalogue entry with that id and version exists with other content (409, admin API).
    case interventionTemplateConflict
    /// The Idempotency-Key was already used with a different body (422).
    case idempotencyKeyReused
    /// The request body is not JSON (415).
    case unsupportedMediaType
    /// The body is over the size limit (413).
    case payloadTooLarge
    /// The header section is over the size limit (431).
    case headersTooLarge
    /// The request is not valid HTTP/1.1 (400).
    case malformedRequest
    /// The request did not arrive in time (408).
    case requestTimeout
    /// A transfer encoding other than chunked (501).
    case notImplemented
    /// An HTTP version other than 1.0 or 1.1 (505).
    case httpVersionNotSupported
    /// A rate limit is exceeded (429).
    case rateLimitExceeded
    /// The server failed or is overloaded (500, 503).
    case serverError

    /// The short, constant summary of the problem type.
    public var title: String {
        switch self {
        case .contextInvalid: return "The request is invalid"
        case .unauthorized: return "Authentication required"
        case .forbidden: return "Not allowed for this credential"
        case .denied: return "The subject denied insights"
        case .overrideNotAllowed: return "Overrides are for sandbox credentials only"
        case .notFound: return "No such resource"
        case .evaluationNotFound: return "No such evaluation"
        case .callerNotFound: return "No such caller"
        case .keyNotFound: return "No such key"
        case .methodNotAllowed: return "Method not allowed"
        case .consumptionConflict: return "A different consumption report exists"
        case .interventionTemplateUnknown: return "No such intervention template"
        case .interventionKindMismatch: return "The template is of another intervention"
        case .interventionTemplateRetired: return "The intervention template was retired"
        case .interventionTimeInvalid: return "An intervention time is out of range"
        case .interventionTemplateNotFound: return "No such intervention template"
        case .interventionTemplateConflict: return "A different intervention template exists"
        case .idempotencyKeyReused: return "Idempotency key reused with a different body"
        case .unsupportedMediaType: return "The body must be JSON"
        case .payloadTooLarge: return "The body is too large"
        case .headersTooLarge: return "The header section is too large"
        case .malformedRequest: return "Malformed HTTP request"
        case .requestTimeout: return "The request took too long to arrive"
        case .notImplemented: return "Transfer encoding not supported"
        case .httpVersionNotSupported: return "HTTP version not supported"
        case .rateLimitExceeded: return "Rate limit exceeded"
        case .serverError: return "Server error"
        }
    }
}

extension Problem {
    /// The problem answering a transport-level error.
    static func from(_ error: HTTPProtocolError) -> Problem {
        switch error {
        case .malformedRequest(let reason): return Problem(400, .malformedRequest, "The request is not valid HTTP/1.1: \(reason).")
        case .headersTooLarge: return Problem(431, .headersTooLarge, "The request's header section is over the server's limit.")
        case .bodyTooLarge(let limit): return Problem(413, .payloadTooLarge, "The request body is over the limit of \(limit) bytes.")
        case .unsupportedTransferEncoding: return Problem(501, .notImplemented, "Only the chunked transfer coding is supported.")
        case .unsupportedVersion: return Problem(505, .httpVersionNotSupported, "Only HTTP/1.0 and HTTP/1.1 are supported.")
        case .requestTimeout: return Problem(408, .requestTimeout, "The request did not arrive completely in time.")
        }
    }

    /// The store could not take the write.
    static func from(_ failure: StoreFailure) -> Problem {
        switch failure {
        case .overloaded:
            var problem = Problem(503, .serverError, "The server is busy; retry shortly.")
            problem.headers = [("Retry-After", "1")]
            return problem
        case .unavailable:
            var problem = Problem(503, .serverError, "The request could not be stored, so nothing was recorded; retry.")
            problem.headers = [("Retry-After", "1")]
            return problem
        }
    }
}
