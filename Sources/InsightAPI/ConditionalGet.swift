import HTTPServer

/// Conditional GET (RFC 9110 §13.1.2, §15.4.5) for what a client keeps a copy of: the console's
/// files and the signing keys. The answer carries its entity tag; a request whose
/// `If-None-Match` names it gets `304 Not Modified` with the same headers and no body.
extension InsightAPIHandler {
    /// `response` (a `200`) with `ETag: etag`, or, when `request` already holds that copy, a `304`
    /// with the same headers but `Content-Type`.
    static func conditional(_ response: HTTPResponse, etag: String, request: HTTPRequest) -> HTTPResponse {
        var response = response
        response.headers.add("ETag", etag)
        guard let wanted = request.headers["If-None-Match"], matches(wanted, etag: etag) else { return response }
        var headers = HTTPHeaders()
        for (name, value) in response.headers where name.lowercased() != "content-type" { headers.add(name, value) }
        return HTTPResponse(status: 304, headers: headers)
    }

    /// Whether an `If-None-Match` list names `etag` (or is `*`), weak or strong (weak comparison).
    static func matches(_ list: String, etag: String) -> Bool {
        list.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingOWS()
            return tag == "*" || tag == etag || (tag.hasPrefix("W/") && tag.dropFirst(2) == etag)
        }
    }
}
