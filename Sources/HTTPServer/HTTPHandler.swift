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
