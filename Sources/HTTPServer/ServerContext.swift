internal import Dispatch
internal import Synchronization

/// What every loop of one server shares: settings, the handler and the counters.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let limits: HTTPRequestParser.Limits

    /// Connections accepted and not yet closed, across all loops (checked against the limit).
    let openConnections = Atomic<Int>(0)
    /// Requests handed to the handler and not yet answered.
    let inFlightRequests = Atomic<Int>(0)
    /// Connections closed at once because the limit was reached.
    let rejectedConnections = Atomic<Int>(0)
    /// Connections closed before their TLS handshake completed.
    let tlsHandshakeFailures = Atomic<Int>(0)
    /// Set when shutdown begins; from then on closes and answers signal `drainProgress`.
    let draining = Atomic<Bool>(false)
    /// Wakes a shutdown waiting for connections and requests to finish.
    let drainProgress = DispatchSemaphore(value: 0)

    init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        limits = HTTPRequestParser.Limits(
            maxHeaderBytes: configuration.maxHeaderBytes,
            maxHeaderCount: configuration.maxHeaderCount,
            maxBodyBytes: configuration.maxBodyBytes)
    }

    /// Counts a new connection unless the limit is reached; false means reject it.
    func admitConnection() -> Bool {
        let admitted = openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        if admitted <= configuration.maxConnections { return true }
        openConnections.wrappingSubtract(1, ordering: .relaxed)
        rejectedConnections.wrappingAdd(1, ordering: .relaxed)
        return false
    }

    func connectionClosed() {
        openConnections.wrappingSubtract(1, ordering: .releasing)
        noteDrainProgress()
    }

    func tlsHandshakeFailed() {
        tlsHandshakeFailures.wrappingAdd(1, ordering: .relaxed)
    }

    func requestStarted() {
        inFlightRequests.wrappingAdd(1, ordering: .relaxed)
    }

    func requestFinished() {
        inFlightRequests.wrappingSubtract(1, ordering: .releasing)
        noteDrainProgress()
    }

    /// Whether nothing is left to wait for during shutdown.
    var isQuiescent: Bool {
        openConnections.load(ordering: .acquiring) == 0 && inFlightRequests.load(ordering: .acquiring) == 0
    }

    private func noteDrainProgress() {
        if draining.load(ordering: .acquiring) { drainProgress.signal() }
    }
}
