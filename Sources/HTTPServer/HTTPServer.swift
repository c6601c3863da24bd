internal import CLibEvent
internal import Dispatch
internal import Glibc
internal import Locking
internal import Synchronization

/// An HTTP/1.1 server on libevent bufferevents: `threads` loop threads, one event base each,
/// sharing one listening socket.
///
/// Lifecycle: `init` → `start()` → (`stopAccepting()`) → `shutdown(timeout:)`. A server starts
/// at most once. Every transport-level error is answered through `HTTPHandler.response(for:)`.
public final class HTTPServer: Sendable {
    private enum Phase {
        case idle, running, stopping, stopped
    }

    private struct State: Sendable {
        var phase = Phase.idle
        var loops: [EventLoop] = []
        /// The shared listening socket, or -1 once closed.
        var listenSocket: Int32 = -1
        /// Where the loops take the TLS context of each new connection (nil without TLS).
        var tls: TLSContextSlot?
    }

    private let context: ServerContext
    private let state = Locked(State())
    private let port = Atomic<Int>(0)

    /// Creates a server; nothing is bound until `start()`.
    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        context = ServerContext(configuration: configuration, handler: handler)
    }

    deinit {
        shutdown(timeout: 0)
    }

    /// The settings the server was created with.
    public var configuration: HTTPServerConfiguration { context.configuration }

    /// Binds the socket (with SO_REUSEADDR) and starts the loop threads. With
    /// `configuration.tls`, first loads the certificate, key and client CAs into one OpenSSL
    /// context that every connection's TLS session is made from.
    ///
    /// Also sets SIGPIPE to be ignored for the process, as every socket server must: libevent
    /// writes with `writev`, which would otherwise kill the process when a client goes away.
    /// - Throws: `HTTPServerError`, e.g. `127.0.0.1:8080: Address already in use`, or of kind
    ///   `.tls`: `TLS private key /etc/insightd/key.pem: No such file or directory`.
    public func start() throws {
        try state.withLock { state throws(HTTPServerError) in
            guard state.phase == .idle else {
                throw HTTPServerError(.notStartable, "the server was already started")
            }
            if let problem = context.configuration.validationError() {
                throw HTTPServerError(.invalidConfiguration, problem)
            }
            guard libeventRuntime.ready else {
                throw HTTPServerError(.eventLoop, "libevent could not enable pthread locking")
            }
            let configuration = context.configuration
            // Certificates first: a bad file is reported before the port is taken.
            var tls: TLSContextSlot?
            if let settings = configuration.tls { tls = TLSContextSlot(try TLSContext(settings)) }
            let (socket, boundPort) = try bindListeningSocket(host: configuration.host, port: configuration.port)
            var loops: [EventLoop] = []
            do throws(HTTPServerError) {
                for _ in 0..<configuration.threads {
                    let loop = try EventLoop(context: context, tls: tls)
                    try loop.attachListener(socket: socket)
                    loops.append(loop)
                }
                for loop in loops { loop.peers = loops.filter { $0 !== loop } }
                for loop in loops { try loop.startThread() }
            } catch {
                for loop in loops { loop.terminate() }
                close(socket)
                throw error
            }
            port.store(boundPort, ordering: .releasing)
            state.loops = loops
            state.listenSocket = socket
            state.tls = tls
            state.phase = .running
        }
    }

    /// The port actually bound (the ephemeral one when configured with port 0); 0 before start.
    public var boundPort: Int {
        port.load(ordering: .acquiring)
    }

    /// Closes the listening socket; existing connections carry on. Idempotent. When called
    /// from outside the loop threads, the port refuses connections once this returns.
    public func stopAccepting() {
        let (loops, socket) = state.withLock { state in
            let socket = state.listenSocket
            state.listenSocket = -1
            return (state.loops, socket)
        }
        guard socket >= 0 else { return }
        // Each loop frees its own listener; the socket is closed once none watches it.
        let group = DispatchGroup()
        for loop in loops {
            group.enter()
            let accepted = loop.execute {
                loop.closeListener()
                group.leave()
            }
            if !accepted { group.leave() }
        }
        if loops.contains(where: \.isCurrentThread) {
            // This loop cannot run its part until the caller returns: finish asynchronously.
            group.notify(queue: .global()) { _ = close(socket) }
        } else {
            group.wait()
            close(socket)
        }
    }

    /// Stops accepting, lets in-flight requests finish (up to `timeout` seconds), closes idle
    /// keep-alive connections at once and busy ones after their response, then closes whatever
    /// is left and stops and joins the loop threads. Idempotent; concurrent callers after the
    /// first return at once. Call it from a thread that is not a loop thread.
    public func shutdown(timeout: Double) {
        let loops: [EventLoop]? = state.withLock { state in
            switch state.phase {
            case .idle:
                state.phase = .stopped
                return nil
            case .running:
                state.phase = .stopping
                return state.loops
            case .stopping, .stopped:
                return nil
            }
        }
        guard let loops else { return }

        stopAccepting()
        context.draining.store(true, ordering: .releasing)
        for loop in loops {
            _ = loop.execute { loop.beginDraining() }
        }
        let deadline = DispatchTime.now() + max(timeout, 0)
        while !context.isQuiescent {
            if context.drainProgress.wait(timeout: deadline) == .timedOut { break }
        }
        for loop in loops { loop.stop() }
        for loop in loops { loop.join() }
        state.withLock { state in
            state.phase = .stopped
            state.loops = []
        }
    }

    /// Connections open now, across all loops.
    public var openConnections: Int {
        context.openConnections.load(ordering: .relaxed)
    }

    /// Requests handed to the handler and not yet answered.
    public var inFlightRequests: Int {
        context.inFlightRequests.load(ordering: .relaxed)
    }

    /// Connections closed at accept because `maxConnections` were open, each with a request in
    /// progress (none idle to make room), since start.
    public var rejectedConnections: Int {
        context.rejectedConnections.load(ordering: .relaxed)
    }

    /// Connections closed at accept because their address had `maxConnectionsPerAddress`
    /// connections open, each with a request being handled or answered, since start.
    public var addressRejectedConnections: Int {
        context.addressRejectedConnections.load(ordering: .relaxed)
    }

    /// Idle connections closed to make room for a new one, at `maxConnections` or at its
    /// address's `maxConnectionsPerAddress`, since start (those receiving a request included).
    public var evictedConnections: Int {
        context.evictedConnections.load(ordering: .relaxed)
    }

    /// Of `evictedConnections`, those that were receiving a request: its head or its body had
    /// begun to arrive and was not complete.
    public var evictedIncompleteConnections: Int {
        context.evictedIncompleteConnections.load(ordering: .relaxed)
    }

    /// Loads the certificate, key and client CAs again from the configured files, for the
    /// connections accepted from now on (open connections keep theirs): a renewed certificate
    /// without a restart. Throws the same `.tls` errors as `start()` and changes nothing then.
    /// Returns false when the server does not serve TLS or is not running.
    @discardableResult
    public func reloadTLS() throws(HTTPServerError) -> Bool {
        guard let settings = context.configuration.tls,
            let slot = state.withLock({ $0.phase == .running ? $0.tls : nil })
        else { return false }
        slot.replace(with: try TLSContext(settings))
        return true
    }

    /// TLS connections closed before their handshake completed, since start: refused
    /// versions or ciphers, missing or untrusted client certificates, plain HTTP sent to the
    /// TLS port, clients that closed or stalled (`requestTimeout`) mid-handshake.
    public var tlsHandshakeFailures: Int {
        context.tlsHandshakeFailures.load(ordering: .relaxed)
    }
}

/// Process-wide libevent set-up, done once before the first event base.
private struct LibeventRuntime: Sendable {
    let ready: Bool

    init() {
        signal(SIGPIPE, SIG_IGN)
        ready = evthread_use_pthreads() == 0
    }
}

private let libeventRuntime = LibeventRuntime()

/// Creates, binds and listens on a non-blocking TCP socket; returns it and the bound port.
private func bindListeningSocket(host: String, port: Int) throws(HTTPServerError) -> (Int32, Int) {
    let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    let resolved = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &list)
    guard resolved == 0 else {
        throw HTTPServerError(.bind, "\(address): \(String(cString: gai_strerror(resolved)))")
    }
    defer { freeaddrinfo(list) }

    var lastError: Int32 = EADDRNOTAVAIL
    var candidate = list
    while let info = candidate {
        candidate = info.pointee.ai_next
        let socket = Glibc.socket(
            info.pointee.ai_family,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0)
        guard socket >= 0 else {
            lastError = errno
            continue
        }
        var one: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(socket, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0,
            listen(socket, SOMAXCONN) == 0
        else {
            lastError = errno
            close(socket)
            continue
        }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else {
            lastError = errno
            close(socket)
            continue
        }
        let boundPort: UInt16 = withUnsafePointer(to: &bound) { storage in
            switch Int32(storage.pointee.ss_family) {
            case AF_INET6:
                storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            default:
                storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        }
        return (socket, Int(boundPort))
    }
    throw HTTPServerError(.bind, "\(address): \(String(cString: strerror(lastError)))")
}
