internal import CLibEvent
internal import Glibc
internal import Locking
internal import Synchronization

/// One loop thread: an `event_base`, its listener on the shared socket, its connections, and a
/// locked queue through which other threads hand it work.
///
/// Ownership: the loop owns its base and every event on it and frees them in `finish()`, on
/// its own thread after the loop stops (or on the creating thread if it never ran). libevent
/// callbacks get an unretained pointer to the loop; that is sound because the events are freed
/// before the loop can be deinitialized (the thread holds a strong reference until `finish`).
final class EventLoop: @unchecked Sendable {
    // @unchecked: the libevent handles and the mutable properties are used only on this loop's
    // thread (or before it starts and after it ends); other threads touch only `queue`
    // (locked), `threadID` (atomic), and `thread`, which only the controlling thread uses.

    let context: ServerContext
    /// The TLS context when the server speaks HTTPS: every accepted connection gets a session.
    let tls: TLSContextSlot?
    let base: OpaquePointer
    /// A user event activated from other threads when `queue` gains work.
    private var wakeEvent: OpaquePointer?
    private var listener: OpaquePointer?
    /// Re-enables accepting after the process ran out of descriptors.
    private var acceptResumeTimer: OpaquePointer?

    /// The open connections. This table owns them: each stays here, and so alive, exactly as
    /// long as its bufferevent exists.
    private var connections: [ObjectIdentifier: Connection] = [:]
    /// Connections this loop serves or has been handed and not yet adopted (read by the other
    /// loops when they choose where a new connection goes).
    let assigned = Atomic<Int>(0)
    /// The connections with no request handed to the handler or being answered (waiting for a
    /// request, or still receiving one), longest idle first: at the connection limit, the
    /// server's oldest makes room for a new connection.
    let idle = IdleConnections(.loop)
    /// With a per-address cap: this loop's connections from each address, the idle ones listed
    /// longest idle first: at an address's cap, one of its own idle connections makes room.
    private var addressLists: [PeerAddress: IdleConnections] = [:]
    /// The server's other loops, set before the threads start and cleared when this one ends.
    var peers: [EventLoop] = []
    /// True once shutdown began: connections close after their current response.
    private(set) var draining = false
    /// Renders response heads; loop-local so its buffer and date are reused without locks.
    var encoder = HTTPResponseEncoder()
    /// Where the loop's plain connections `recv` (`readBufferBytes`, 64 KiB by default: many
    /// times a typical evaluation request): a request that arrives whole is parsed here and
    /// never copied into its connection's buffer (which would allocate a chunk of its size and
    /// free it again, every request).
    let readBuffer: UnsafeMutableRawBufferPointer

    // Common timeouts (libevent keeps equal durations in O(1) queues instead of its heap).
    let headerTimeout: UnsafePointer<timeval>
    let requestTimeout: UnsafePointer<timeval>
    let idleTimeout: UnsafePointer<timeval>
    let writeTimeout: UnsafePointer<timeval>
    let lingerTimeout: UnsafePointer<timeval>

    private let queue = Locked(TaskQueue())
    /// The loop thread's pthread id while it runs, else 0.
    private let threadID = Atomic<UInt>(0)
    /// The thread to join; set and cleared only by the controlling thread.
    private var thread: pthread_t?
    private var finished = false

    /// How long a connection closed after an error may keep draining its client's unread bytes.
    static let lingerSeconds = 2
    /// How long accepting pauses after the process ran out of descriptors or memory.
    static let acceptPauseMilliseconds = 100

    enum Task: Sendable {
        case respond(Connection, sequence: UInt64, HTTPResponse)
        case run(@Sendable () -> Void)
    }

    private struct TaskQueue: Sendable {
        var tasks: [Task] = []
        var stopped = false
    }

    init(context: ServerContext, tls: TLSContextSlot?) throws(HTTPServerError) {
        self.context = context
        self.tls = tls
        guard let base = event_base_new() else {
            throw HTTPServerError(.eventLoop, "could not create an event base")
        }
        func common(_ seconds: Int) throws(HTTPServerError) -> UnsafePointer<timeval> {
            var duration = timeval(tv_sec: seconds, tv_usec: 0)
            guard let pointer = event_base_init_common_timeout(base, &duration) else {
                event_base_free(base)
                throw HTTPServerError(.eventLoop, "could not create a timeout queue")
            }
            return pointer
        }
        let configuration = context.configuration
        self.base = base
        headerTimeout = try common(configuration.headerTimeout)
        requestTimeout = try common(configuration.requestTimeout)
        idleTimeout = try common(configuration.idleTimeout)
        writeTimeout = try common(configuration.writeTimeout)
        lingerTimeout = try common(Self.lingerSeconds)
        // After the last throw that precedes full initialization (deinit frees it from here on).
        readBuffer = .allocate(byteCount: configuration.readBufferBytes, alignment: 16)
        // Unretained (here and for the listener and timer): `finish` frees them before deinit.
        guard let wake = event_new(base, -1, 0, loopWakeCallback, Unmanaged.passUnretained(self).toOpaque()) else {
            finish()
            throw HTTPServerError(.eventLoop, "could not create an event")
        }
        wakeEvent = wake
    }

    deinit {
        finish()
        readBuffer.deallocate()
    }

    // MARK: - Threads

    /// Whether the caller runs on this loop's thread.
    var isCurrentThread: Bool {
        threadID.load(ordering: .relaxed) == pthread_self()
    }

    /// Starts the loop thread.
    func startThread() throws(HTTPServerError) {
        // The thread owns one reference to the loop until `run` returns.
        let argument = Unmanaged.passRetained(self).toOpaque()
        var id = pthread_t()
        let result = pthread_create(
            &id, nil,
            { argument in
                Unmanaged<EventLoop>.fromOpaque(argument!).takeRetainedValue().run()
                return nil
            }, argument)
        guard result == 0 else {
            Unmanaged<EventLoop>.fromOpaque(argument).release()
            throw HTTPServerError(.eventLoop, "could not start a loop thread: \(String(cString: strerror(result)))")
        }
        thread = id
    }

    private func run() {
        threadID.store(pthread_self(), ordering: .relaxed)
        event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY)
        finish()
        threadID.store(0, ordering: .relaxed)
    }

    /// Waits for the loop thread to end (after `stop`). Not from the loop thread itself.
    func join() {
        guard let thread, !isCurrentThread else { return }
        pthread_join(thread, nil)
        self.thread = nil
    }

    /// Stops and joins a running loop, or frees one whose thread never started.
    func terminate() {
        if thread == nil && threadID.load(ordering: .relaxed) == 0 {
            finish()
        } else {
            stop()
            join()
        }
    }

    /// Asks the loop to close everything and end its thread.
    func stop() {
        _ = execute { [self] in
            draining = true
            closeListener()
            for connection in Array(connections.values) { connection.forceClose() }
            event_base_loopbreak(base)
        }
    }

    /// Frees everything the loop owns; runs once, on the loop thread after the loop ends.
    private func finish() {
        guard !finished else { return }
        finished = true
        peers = []  // the loops referred to each other
        for connection in Array(connections.values) { connection.forceClose() }
        let leftover = queue.withLock { queue in
            queue.stopped = true
            let tasks = queue.tasks
            queue.tasks = []
            return tasks
        }
        // Run what was handed over before the stop (answers to closed connections are dropped).
        for task in leftover { perform(task) }
        closeListener()
        if let wakeEvent { event_free(wakeEvent) }
        wakeEvent = nil
        event_base_free(base)
    }

    // MARK: - Cross-thread work

    /// Hands `task` to the loop thread; false if the loop has stopped (the task is dropped).
    @discardableResult
    func enqueue(_ task: Task) -> Bool {
        queue.withLock { queue in
            if queue.stopped { return false }
            queue.tasks.append(task)
            if queue.tasks.count == 1, let wakeEvent {
                // Under the lock so `finish` cannot free the event between the check and here.
                event_active(wakeEvent, EV_READ, 0)
            }
            return true
        }
    }

    /// Runs `work` on the loop thread; false if the loop has stopped (`work` will not run).
    func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        enqueue(.run(work))
    }

    fileprivate func runQueuedTasks() {
        let tasks = queue.withLock { queue in
            let tasks = queue.tasks
            queue.tasks = []
            return tasks
        }
        for task in tasks { perform(task) }
    }

    private func perform(_ task: Task) {
        switch task {
        case .respond(let connection, let sequence, let response):
            connection.deliver(sequence: sequence, response)
        case .run(let work):
            work()
        }
    }

    // MARK: - Accepting

    /// Starts accepting on the shared listening socket. Called before the thread starts.
    ///
    /// Every loop watches the same non-blocking descriptor (as nginx workers do with
    /// accept_mutex off): the kernel wakes the loops, one `accept` wins, the others get EAGAIN,
    /// which libevent ignores. With a handful of loops the extra wake-ups are cheap, and no
    /// dispatcher thread sits between accept and the loop that serves the connection.
    /// SO_REUSEPORT would balance better, but it lets a second daemon bind the same port
    /// without an error and steal part of the traffic; a clear "Address already in use" at
    /// start-up is worth more here.
    func attachListener(socket: Int32) throws(HTTPServerError) {
        guard
            let listener = evconnlistener_new(
                base, loopAcceptCallback, Unmanaged.passUnretained(self).toOpaque(),
                LEV_OPT_CLOSE_ON_EXEC, 0, socket)
        else {
            throw HTTPServerError(.eventLoop, "could not listen on the event loop")
        }
        evconnlistener_set_error_cb(listener, loopAcceptErrorCallback)
        self.listener = listener
    }

    /// Stops accepting; the shared socket itself is closed by the server afterwards.
    func closeListener() {
        if let acceptResumeTimer { event_free(acceptResumeTimer) }
        acceptResumeTimer = nil
        if let listener { evconnlistener_free(listener) }
        listener = nil
    }

    fileprivate func accept(_ socket: Int32, address: UnsafeMutablePointer<sockaddr>?) {
        guard !draining else {
            close(socket)
            return
        }
        let peerAddress = PeerAddress(address)
        let remote = Self.describe(address)
        if let peerAddress, !context.reserve(peerAddress) {
            adoptInPlaceOfIdle(from: peerAddress, socket, remote: remote, askingNext: peers[...])
            return
        }
        guard context.admitConnection() else {
            if let heaviest = context.heaviestAddress() {
                adoptInPlaceOfIdle(socket, remote: remote, address: peerAddress, from: heaviest, askingNext: peers[...])
            } else {
                makeRoom(for: socket, remote: remote, address: peerAddress)
            }
            return
        }
        // Whichever loop wins `accept` would keep the connection, and long-lived keep-alive
        // connections stay where they land, so one loop could serve far more requests than the
        // others. A loop with two or more connections more than a peer hands the new one over.
        if let peer = peers.min(by: { $0.assigned.load(ordering: .relaxed) < $1.assigned.load(ordering: .relaxed) }),
            peer.assigned.load(ordering: .relaxed) + 1 < assigned.load(ordering: .relaxed)
        {
            peer.assigned.wrappingAdd(1, ordering: .relaxed)
            if peer.execute({ peer.adopt(socket, remote: remote, address: peerAddress) }) { return }
            peer.assigned.wrappingSubtract(1, ordering: .relaxed)
        }
        assigned.wrappingAdd(1, ordering: .relaxed)
        adopt(socket, remote: remote, address: peerAddress)
    }

    /// At the connection limit, when no address holds more than one connection (or addresses
    /// are not counted), or the one holding the most has none idle: the loop holding the
    /// server's longest idle connection closes it and serves `socket` in its place. Refused
    /// when no loop has an idle one: every open connection has a request being handled or
    /// answered.
    private func makeRoom(for socket: Int32, remote: String, address: PeerAddress?) {
        var chosen = self
        var oldest = idle.oldestSince.load(ordering: .relaxed)
        for peer in peers {
            let since = peer.idle.oldestSince.load(ordering: .relaxed)
            if since < oldest { (chosen, oldest) = (peer, since) }
        }
        let target = chosen
        guard oldest < .max else {
            context.connectionRejected(from: address)
            close(socket)
            return
        }
        target.assigned.wrappingAdd(1, ordering: .relaxed)
        if target === self {
            adoptInPlaceOfIdle(socket, remote: remote, address: address)
        } else if !target.execute({ target.adoptInPlaceOfIdle(socket, remote: remote, address: address) }) {
            target.assigned.wrappingSubtract(1, ordering: .relaxed)
            context.connectionRejected(from: address)
            close(socket)
        }
    }

    /// Serves `socket` in place of this loop's longest idle connection, which it closes (unless
    /// a place came free meanwhile); refuses it if none is idle any more. `assigned` and the
    /// address's cap already count it.
    private func adoptInPlaceOfIdle(_ socket: Int32, remote: String, address: PeerAddress?) {
        if !context.admitConnection() {
            guard let oldest = idle.oldest else {
                assigned.wrappingSubtract(1, ordering: .relaxed)
                context.connectionRejected(from: address)
                close(socket)
                return
            }
            context.admitInPlaceOfIdle(reserving: nil, evictingIncomplete: oldest.requestBegun)
            oldest.evict()
        }
        adopt(socket, remote: remote, address: address)
    }

    /// At the connection limit: serves `socket` (from `address`, which counts it) in place of
    /// this loop's longest idle connection from `heaviest`, the address holding the most, which
    /// it closes; without one here, the next loop of `others` tries; without one anywhere, the
    /// server's longest idle connection makes room (`makeRoom`). Oldest first alone would let
    /// a client's new connection be closed before its request is read, by the reconnects of
    /// connections it displaced: its place goes instead to whoever holds the most.
    private func adoptInPlaceOfIdle(
        _ socket: Int32, remote: String, address: PeerAddress?, from heaviest: PeerAddress,
        askingNext others: ArraySlice<EventLoop>
    ) {
        if let oldest = addressLists[heaviest]?.oldest {
            assigned.wrappingAdd(1, ordering: .relaxed)
            if !context.admitConnection() {
                context.admitInPlaceOfIdle(reserving: nil, evictingIncomplete: oldest.requestBegun)
                oldest.evict()
            }
            adopt(socket, remote: remote, address: address)
            return
        }
        if let next = others.first {
            let rest = others.dropFirst()
            if next.execute({ next.adoptInPlaceOfIdle(socket, remote: remote, address: address, from: heaviest, askingNext: rest) }) {
                return
            }
        }
        // No connection of the heaviest address could make room: all of them are being served,
        // or on their way to a loop. A newcomer from an address that holds others is then
        // refused, since the server's longest idle connection, which `makeRoom` would close, is
        // under such churn a light client's new connection whose request is not read yet.
        if let address, context.holdsOthers(address) {
            context.connectionRejected(from: address)
            close(socket)
            return
        }
        makeRoom(for: socket, remote: remote, address: address)
    }

    /// At `address`'s cap: serves `socket` in place of this loop's longest idle connection from
    /// that address, which it closes; without one here, the next loop of `others` tries.
    /// Refused when no loop has one: every connection from the address has a request being
    /// handled or answered. Nothing counts the socket yet.
    private func adoptInPlaceOfIdle(
        from address: PeerAddress, _ socket: Int32, remote: String,
        askingNext others: ArraySlice<EventLoop>
    ) {
        if let oldest = addressLists[address]?.oldest {
            assigned.wrappingAdd(1, ordering: .relaxed)
            context.admitInPlaceOfIdle(reserving: address, evictingIncomplete: oldest.requestBegun)
            oldest.evict()
            adopt(socket, remote: remote, address: address)
            return
        }
        if let next = others.first {
            let rest = others.dropFirst()
            if next.execute({ next.adoptInPlaceOfIdle(from: address, socket, remote: remote, askingNext: rest) }) { return }
        }
        context.connectionRejectedAtAddressCap()
        close(socket)
    }

    /// Serves `socket` on this loop (its thread); `assigned` and the context already count it.
    private func adopt(_ socket: Int32, remote: String, address: PeerAddress?) {
        guard !draining else {
            close(socket)
            assigned.wrappingSubtract(1, ordering: .relaxed)
            context.connectionClosed(from: address)
            return
        }
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let created: OpaquePointer?
        if let tls {
            created = tls.context.makeBufferevent(base: base, socket: socket)
        } else {
            created = bufferevent_socket_new(base, socket, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))
            if created == nil { close(socket) }
        }
        guard let bufferevent = created else {
            assigned.wrappingSubtract(1, ordering: .relaxed)
            context.connectionClosed(from: address)
            return
        }
        var addressList: IdleConnections?
        if context.capsAddresses, let address {
            let list = addressLists[address] ?? IdleConnections(.address)
            list.members += 1
            addressLists[address] = list
            addressList = list
        }
        let connection = Connection(
            loop: self, bufferevent: bufferevent, remoteAddress: remote, peerAddress: address,
            addressIdle: addressList)
        connections[ObjectIdentifier(connection)] = connection
        connection.start()
    }

    fileprivate func acceptFailed(_ error: Int32) {
        switch error {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            // The pending connection stays queued and the socket stays readable: pause, or
            // the loop would spin on the same failing accept.
            guard let listener else { return }
            if acceptResumeTimer == nil {
                acceptResumeTimer = event_new(
                    base, -1, 0, loopAcceptResumeCallback,
                    Unmanaged.passUnretained(self).toOpaque())
            }
            guard let acceptResumeTimer else { return }
            evconnlistener_disable(listener)
            insightd_timer_add_ms(acceptResumeTimer, Self.acceptPauseMilliseconds)
        default:
            break
        }
    }

    fileprivate func resumeAccepting() {
        if let listener, !draining { evconnlistener_enable(listener) }
    }

    /// `ip:port`, or `[ip6]:port`.
    private static func describe(_ address: UnsafeMutablePointer<sockaddr>?) -> String {
        guard let address else { return "" }
        func text(_ family: Int32, _ ip: UnsafeRawPointer) -> String {
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
                guard let written = inet_ntop(family, ip, buffer.baseAddress, socklen_t(buffer.count)) else {
                    return "?"
                }
                return String(cString: written)
            }
        }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var ip = v4.pointee.sin_addr
                return "\(text(AF_INET, &ip)):\(UInt16(bigEndian: v4.pointee.sin_port))"
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var ip = v6.pointee.sin6_addr
                return "[\(text(AF_INET6, &ip))]:\(UInt16(bigEndian: v6.pointee.sin6_port))"
            }
        default:
            return ""
        }
    }

    // MARK: - Connections

    /// Starts a graceful shutdown: idle connections close now, busy ones after their response.
    func beginDraining() {
        draining = true
        for connection in Array(connections.values) { connection.drain() }
    }

    func remove(_ connection: Connection) {
        if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
            assigned.wrappingSubtract(1, ordering: .relaxed)
        }
        if let list = connection.addressIdle, let address = connection.peerAddress {
            list.members -= 1
            if list.members == 0 { addressLists[address] = nil }
        }
    }

    /// The cached time of this loop iteration, in seconds since the epoch.
    var now: Int {
        var time = timeval()
        event_base_gettimeofday_cached(base, &time)
        return time.tv_sec
    }
}

// C callbacks: plain functions (never actor-isolated), each recovering its object from the
// unretained context pointer described on the owning type.

private func loopWakeCallback(_ socket: Int32, _ events: Int16, _ context: UnsafeMutableRawPointer?) {
    Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue().runQueuedTasks()
}

private func loopAcceptCallback(
    _ listener: OpaquePointer?, _ socket: Int32, _ address: UnsafeMutablePointer<sockaddr>?,
    _ length: Int32, _ context: UnsafeMutableRawPointer?
) {
    Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue().accept(socket, address: address)
}

private func loopAcceptErrorCallback(_ listener: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let error = errno
    Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue().acceptFailed(error)
}

private func loopAcceptResumeCallback(_ socket: Int32, _ events: Int16, _ context: UnsafeMutableRawPointer?) {
    Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue().resumeAccepting()
}
