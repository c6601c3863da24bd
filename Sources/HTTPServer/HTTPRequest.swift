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
    /// Whether the request came over TLS.
    public var isTLS: Bool
    /// With client-certificate authentication (`TLSConfiguration.clientCAPath`), the subject of
    /// the client's verified certificate in RFC 2253 form, e.g. `"CN=checkout,O=Acme"`; nil
    /// otherwise. The same for every request on the connection.
    public var tlsPeerSubject: String?

    /// Creates a request; the server builds these itself, tests and in-process clients may too.
    public init(
        method: String,
        path: String,
        query: String? = nil,
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        remoteAddress: String = "",
        isTLS: Bool = false,
        tlsPeerSubject: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.isTLS = isTLS
        self.tlsPeerSubject = tlsPeerSubject
    }
}
