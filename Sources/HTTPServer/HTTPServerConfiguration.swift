/// Settings of an `HTTPServer`. Times are whole seconds.
public struct HTTPServerConfiguration: Sendable {
    /// The address to listen on: an IPv4 or IPv6 literal or a host name.
    public var host: String = "127.0.0.1"
    /// The TCP port; 0 picks a free one (see `HTTPServer.boundPort`).
    public var port: Int = 8080
    /// The number of loop threads, each with its own event base.
    public var threads: Int = 2
    /// The largest request body accepted (declared or de-chunked); larger ones get 413.
    public var maxBodyBytes: Int = 1 << 20
    /// The largest header section accepted, request line included; larger ones get 431.
    public var maxHeaderBytes: Int = 16 << 10
    /// The most header fields accepted in one request; more get 431.
    public var maxHeaderCount: Int = 100
    /// The most connections open at once. At the limit a new connection takes the place of
    /// the longest idle one (nothing handed to the handler or being answered: waiting for a
    /// request, or still receiving one), which is closed; when every connection has a request
    /// being handled or answered, the new one is accepted and closed at once.
    public var maxConnections: Int = 1024
    /// The most connections open at once from one address (an IPv4 address, or an IPv6 /64).
    /// At the cap a new connection from the address takes the place of one of the address's
    /// own idle connections; when all of them have a request being handled or answered, the
    /// new one is accepted and closed at once, without an answer. 0: no cap. Kept well below
    /// `maxConnections`, so that a few addresses cannot fill the table. Behind a proxy every
    /// connection comes from the proxy's address.
    public var maxConnectionsPerAddress: Int = 64
    /// Seconds from a request's first byte to the end of its head; slower heads get 408. A
    /// connection's first request head must also arrive within this time of the connection's
    /// opening (of its TLS handshake's end): one that sends nothing is closed without an answer.
    public var headerTimeout: Int = 5
    /// Seconds from the end of a request's head to the end of its body; slower bodies get 408.
    /// A TLS handshake must also complete within this time of the connection's opening.
    public var requestTimeout: Int = 10
    /// Seconds a connection may wait for its next request after an answer before it is closed.
    public var idleTimeout: Int = 60
    /// Seconds a response may take to drain to the client before the connection is dropped.
    public var writeTimeout: Int = 10
    /// Bytes a loop thread reads from a socket at once, into one buffer of this size per loop.
    public var readBufferBytes: Int = 64 << 10
    /// When set, the server speaks only HTTPS on its port (plain HTTP gets no answer).
    public var tls: TLSConfiguration?

    /// The defaults above.
    public init() {}

    /// Why the configuration cannot be used, or nil when it can.
    func validationError() -> String? {
        if !(0...65535).contains(port) { return "port \(port) is not in 0...65535" }
        if threads < 1 { return "threads must be at least 1, not \(threads)" }
        if maxBodyBytes < 0 { return "maxBodyBytes must not be negative" }
        if maxHeaderBytes < 64 { return "maxHeaderBytes must be at least 64" }
        if maxHeaderCount < 1 { return "maxHeaderCount must be at least 1" }
        if maxConnections < 1 { return "maxConnections must be at least 1" }
        if maxConnectionsPerAddress < 0 { return "maxConnectionsPerAddress must not be negative" }
        if readBufferBytes < 1024 { return "readBufferBytes must be at least 1024" }
        if headerTimeout < 1 || requestTimeout < 1 || idleTimeout < 1 || writeTimeout < 1 {
            return "timeouts must be at least 1 second"
        }
        if let problem = tls?.validationError() { return problem }
        return nil
    }
}
