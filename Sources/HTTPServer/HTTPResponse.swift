/// A response to send. The server adds `Content-Length`, `Date` and `Connection` itself and
/// ignores those fields (and `Transfer-Encoding`) if the handler sets them, except that a
/// handler's `Connection: close` makes the server close the connection after this response.
public struct HTTPResponse: Sendable {
    /// The status code, e.g. `200`.
    public var status: Int
    /// Header fields to send, in order.
    public var headers: HTTPHeaders
    /// The body; not sent for `HEAD` requests or for 1xx, 204 and 304 statuses.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
