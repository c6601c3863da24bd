internal import Synchronization

/// The application side of the server.
public protocol HTTPHandler: Sendable {
    /// Called on a loop thread. May answer synchronously or later from another thread.
    ///
    /// Keep the work done on the loop thread short: the loop serves other connections only
    /// between calls. Answer exactly once through `responder`; while a request is unanswered
    /// its connection reads no further requests.
    func handle(_ request: HTTPRequest, responder: HTTPResponder)

    /// Renders a transport-level error (the application makes it problem+json; the transport
    /// knows no JSON). Called on a loop thread; the connection closes after this response.
    func response(for error: HTTPProtocolError) -> HTTPResponse

    /// Decides, from its head alone, whether a request that announced its body with
    /// `Expect: 100-continue` may send it (RFC 9110 §10.1.1): `.proceed` sends `100 Continue`
    /// (when the client is waiting for it) and reads the body as usual; `.answer` sends that
    /// final response at once, reads no body and closes the connection after it.
    ///
    /// `head` is the request without its body (`remoteAddress` and the TLS facts are set);
    /// `declaredBodyLength` is its `Content-Length`, or nil when the body is chunked. Called on
    /// a loop thread, synchronously: keep it as short as the start of `handle`. The default
    /// proceeds.
    func continueDecision(for head: HTTPRequest, declaredBodyLength: Int?) -> ContinueDecision
}

extension HTTPHandler {
    public func continueDecision(for head: HTTPRequest, declaredBodyLength: Int?) -> ContinueDecision {
        .proceed
    }
}

/// What `HTTPHandler.continueDecision` answers to `Expect: 100-continue`.
///
/// After a final answer the client may send the body anyway (it need not wait for `100
/// Continue`) or never: what follows on the connection cannot be framed, so the server closes
/// it, discarding what arrives until the client has read the answer (as after a protocol error).
public enum ContinueDecision: Sendable {
    /// Let the client send the body; the request then reaches `handle`.
    case proceed
    /// Answer with this response before the body; the request never reaches `handle`.
    case answer(HTTPResponse)
}

/// The one way to answer a request. Callable from ANY thread, exactly once; later calls are ignored.
public struct HTTPResponder: Sendable {
    private enum Target: Sendable {
        case connection(Connection, sequence: UInt64)
        case callback(CallbackResponse)
    }

    private let target: Target

    init(connection: Connection, sequence: UInt64) {
        target = .connection(connection, sequence: sequence)
    }

    /// A responder that hands the first response to `deliver` and ignores later ones; for
    /// in-process clients and tests that call a handler without a server.
    public init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        target = .callback(CallbackResponse(deliver))
    }

    /// Runs `work` on the loop thread that serves this request's connection: at once when
    /// called there, else queued to it. Work that follows a result made on another thread
    /// (a commit) thus leaves that thread free; a `send` from `work` goes out without a further
    /// hand-over. With a callback responder, or once the loop has stopped, `work` runs at once.
    public func runOnConnectionThread(_ work: @escaping @Sendable () -> Void) {
        switch target {
        case .connection(let connection, _):
            connection.run(work)
        case .callback:
            work()
        }
    }

    /// Sends the response. The first call wins; later calls, and calls after the client has
    /// gone, are ignored.
    public func send(_ response: HTTPResponse) {
        switch target {
        case .connection(let connection, let sequence):
            connection.respond(sequence: sequence, response)
        case .callback(let callback):
            callback.send(response)
        }
    }
}

/// The once-only closure behind `HTTPResponder.init(_:)`.
private final class CallbackResponse: Sendable {
    private let sent = Atomic<Bool>(false)
    private let deliver: @Sendable (HTTPResponse) -> Void

    init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.deliver = deliver
    }

    func send(_ response: HTTPResponse) {
        if !sent.exchange(true, ordering: .acquiringAndReleasing) {
            deliver(response)
        }
    }
}
