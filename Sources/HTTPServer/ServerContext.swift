internal import Dispatch
internal import Locking
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
    /// Connections closed at accept: the limit was reached and no loop had an idle one to close.
    let rejectedConnections = Atomic<Int>(0)
    /// Connections closed at accept: their address had its cap open, every one busy.
    let addressRejectedConnections = Atomic<Int>(0)
    /// Idle connections closed to make room for a new one, at the limit or at an address's cap.
    let evictedConnections = Atomic<Int>(0)
    /// Of `evictedConnections`, those that were receiving a request (its head or its body).
    let evictedIncompleteConnections = Atomic<Int>(0)
    /// Open connections per address, when `maxConnectionsPerAddress` caps them (nil: no cap).
    private let perAddress: Locked<[PeerAddress: Int]>?
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
        perAddress = configuration.maxConnectionsPerAddress > 0 ? Locked([:]) : nil
    }

    // MARK: - Admission
    //
    // A connection is counted from accept to close against its address's cap and against the
    // limit. At either, the new connection may take the place of an idle one, counted before
    // that one is closed (so no other accept takes the place in between). Every path that ends
    // a counted connection calls `connectionClosed` or `connectionRejected` exactly once.

    /// Whether connections are counted per address (`maxConnectionsPerAddress` is not 0).
    var capsAddresses: Bool { perAddress != nil }

    /// Counts a new connection from `address` unless the address has its cap of connections
    /// open; false means nothing was counted.
    func reserve(_ address: PeerAddress) -> Bool {
        guard let perAddress else { return true }
        let cap = configuration.maxConnectionsPerAddress
        return perAddress.withLock { counts in
            let open = counts[address, default: 0]
            guard open < cap else { return false }
            counts[address] = open + 1
            return true
        }
    }

    /// The address holding the most open connections, if one holds more than one (nil without
    /// a cap). At the limit its connections make room first, so that a client holding few
    /// places keeps them however fast the holders of many reconnect. A scan of the addresses,
    /// done only at the limit.
    func heaviestAddress() -> PeerAddress? {
        guard let perAddress else { return nil }
        return perAddress.withLock { counts in
            var heaviest: (address: PeerAddress, open: Int)?
            for (address, open) in counts where open > (heaviest?.open ?? 1) { heaviest = (address, open) }
            return heaviest?.address
        }
    }

    /// Whether `address` holds more open connections than one (a new one counted by `reserve`
    /// included); false without a cap.
    func holdsOthers(_ address: PeerAddress) -> Bool {
        guard let perAddress else { return false }
        return perAddress.withLock { $0[address, default: 0] > 1 }
    }

    /// Counts a new connection unless `maxConnections` are open; false means none was counted.
    func admitConnection() -> Bool {
        let admitted = openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        if admitted <= configuration.maxConnections { return true }
        openConnections.wrappingSubtract(1, ordering: .relaxed)
        return false
    }

    /// Counts a new connection in the place of an idle one the caller closes next: against
    /// the limit, and against its address's cap too when `address` is given (the idle one is
    /// then from the same address). `evictingIncomplete`: the idle one was receiving a request.
    func admitInPlaceOfIdle(reserving address: PeerAddress?, evictingIncomplete: Bool) {
        if let perAddress, let address {
            perAddress.withLock { $0[address, default: 0] += 1 }
        }
        openConnections.wrappingAdd(1, ordering: .relaxed)
        evictedConnections.wrappingAdd(1, ordering: .relaxed)
        if evictingIncomplete { evictedIncompleteConnections.wrappingAdd(1, ordering: .relaxed) }
    }

    /// A new connection is closed at accept: the limit was reached and every open connection
    /// was busy. Releases its address's place.
    func connectionRejected(from address: PeerAddress?) {
        release(address)
        rejectedConnections.wrappingAdd(1, ordering: .relaxed)
    }

    /// A new connection is closed at accept: its address had its cap open, every one busy.
    func connectionRejectedAtAddressCap() {
        addressRejectedConnections.wrappingAdd(1, ordering: .relaxed)
    }

    /// An admitted connection closed.
    func connectionClosed(from address: PeerAddress?) {
        release(address)
        openConnections.wrappingSubtract(1, ordering: .releasing)
        noteDrainProgress()
    }

    private func release(_ address: PeerAddress?) {
        guard let perAddress, let address else { return }
        perAddress.withLock { counts in
            if let open = counts[address], open > 1 { counts[address] = open - 1 } else { counts[address] = nil }
        }
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
