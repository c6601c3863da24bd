/// A complete HTTP request as received: head plus the whole, de-chunked body.
public struct HTTPRequest: Sendable {
    /// The method as sent, e.g. `"POST"` (methods are case-sensitive).
    public var method: String
    /// The request-target's path without the query, not percent-decoded
    /// (`"*"` for an asterisk-form `OPTIONS`, the authority for `CONNECT`).
    public var path: String
    /// The raw query string after `?`, if the target had one.
    public var query: String?
    /// The header fields in the order received.
    public var headers: HTTPHeaders
    /// The complete body, de-chunked; empty when the request had none.
    public var body: [UInt8]
    /// The peer's address as `"ip:port"` (`"[ip6]:port"` for IPv6).
    public var remoteAddress: String

    /// Creates a request; the server builds these itself, tests and in-process clients may too.
    public init(
        method: String,
        path: String,
        query: String? = nil,
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }
}
