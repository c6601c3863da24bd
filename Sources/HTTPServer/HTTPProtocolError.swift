/// Errors the transport detects before a request reaches the handler.
///
/// After any of these the server answers with `HTTPHandler.response(for:)` and closes the
/// connection once that answer is flushed.
public enum HTTPProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 400: bad request line, header syntax, chunk framing or Content-Length. The text says
    /// which rule was broken; it never quotes the request.
    case malformedRequest(String)
    /// 431: the header section (request line included) is over the byte limit, or has too
    /// many fields.
    case headersTooLarge
    /// 413: the declared Content-Length or the de-chunked body is over the limit; answered
    /// before reading the body.
    case bodyTooLarge(limit: Int)
    /// 501: a Transfer-Encoding other than `chunked`.
    case unsupportedTransferEncoding
    /// 505: a version other than HTTP/1.0 or HTTP/1.1.
    case unsupportedVersion
    /// 408: the request was not complete within the request timeout of its first byte (a
    /// connection's first request: of the connection's opening).
    case requestTimeout

    /// The HTTP status code that answers this error.
    public var status: Int {
        switch self {
        case .malformedRequest: 400
        case .headersTooLarge: 431
        case .bodyTooLarge: 413
        case .unsupportedTransferEncoding: 501
        case .unsupportedVersion: 505
        case .requestTimeout: 408
        }
    }

    /// A short, log-safe explanation.
    public var description: String {
        switch self {
        case .malformedRequest(let reason): "malformed request: \(reason)"
        case .headersTooLarge: "header section too large"
        case .bodyTooLarge(let limit): "body larger than \(limit) bytes"
        case .unsupportedTransferEncoding: "unsupported transfer encoding"
        case .unsupportedVersion: "unsupported HTTP version"
        case .requestTimeout: "request not complete in time"
        }
    }
}
