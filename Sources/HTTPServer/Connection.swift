internal import CLibEvent
internal import Glibc

/// One client connection: a bufferevent, a timer, and a `ConnectionMachine` between them.
///
/// The machine holds the connection's protocol state (the parser, the phase, the timer mode,
/// what follows an answer) and decides; this class tells it what happened (bytes arrived, the
/// handler answered, the output drained, the peer closed, the timer fired) and performs the
/// actions it returns: libevent calls, reads and writes, handler calls.
///
/// Over TLS the bufferevent is libevent's OpenSSL one: it handshakes first (bounded by the
/// request timeout), then hands this class plaintext exactly as a socket bufferevent would.
/// Closing sends close_notify when the session is healthy and the output has drained.
///
/// A plain socket is read by an event of the connection's own (`readEvent`), with `recv` into
/// the bufferevent's input buffer; the bufferevent only writes. libevent's own read asks the
/// kernel how many bytes are waiting (`ioctl(FIONREAD)`) before every `readv`: a system call
/// more for every request.
///
/// Ownership: the loop's connection table owns the object from accept to its close. libevent
/// callbacks get an unretained pointer to it, which is sound because closing frees the
/// bufferevent (clearing its callbacks), the read event and the timer before it leaves the
/// table. An `HTTPResponder` may keep the object alive longer; it is then closed and inert.
///
/// One request is handled at a time: while the handler has one, later (pipelined) bytes wait in
/// the input buffer, bounded by its high-water mark, and the next request is parsed only after
/// the response has been flushed, so responses go out in request order.
final class Connection: @unchecked Sendable {
    // @unchecked: every mutable property is used only on `loop`'s thread; other threads only
    // hold a reference (inside an HTTPResponder) and call `respond`, which hands the work over.

    let loop: EventLoop
    let remoteAddress: String
    /// What the per-address cap counts this connection under (nil: not an IP socket).
    let peerAddress: PeerAddress?
    /// With a per-address cap: the loop's list of connections from `peerAddress`.
    let addressIdle: IdleConnections?
    /// Its places in the loop's idle lists while nothing is handed to the handler or written.
    var idleLinks = IdleConnections.ConnectionLinks()
    private var bufferevent: OpaquePointer?
    /// Plain sockets: the persistent read event (see the type's notes); nil over TLS.
    private var readEvent: OpaquePointer?
    private var timer: OpaquePointer?
    /// Unchecked exclusivity: used on the loop thread only, and each access ends before the
    /// actions it returns are performed (which may call back into this object).
    @exclusivity(unchecked) private var machine: ConnectionMachine
    /// A parse loop (`processInput` or `receiveAndParse`) is running further up the stack and
    /// goes on with the input when the handler's answer was written at once: the machine's
    /// `.parse` is left to it. Not protocol state: where this object's own call stack is.
    private var parsing = false

    /// Whether the connection is TLS (the loop has a TLS context).
    private let isTLS: Bool
    /// TLS only: the verified client certificate's subject, once the handshake completed.
    private var tlsPeerSubject: String?

    init(
        loop: EventLoop, bufferevent: OpaquePointer, remoteAddress: String, peerAddress: PeerAddress?,
        addressIdle: IdleConnections?
    ) {
        self.loop = loop
        self.bufferevent = bufferevent
        self.remoteAddress = remoteAddress
        self.peerAddress = peerAddress
        self.addressIdle = addressIdle
        isTLS = loop.tls != nil
        machine = ConnectionMachine(isTLS: isTLS, limits: loop.context.limits)
    }

    /// Installs the callbacks and starts reading. Called once, right after accept.
    func start() {
        guard let bufferevent else { return }
        // Unretained: the loop's table owns this object for as long as these handles exist.
        let context = Unmanaged.passUnretained(self).toOpaque()
        timer = event_new(loop.base, -1, 0, connectionTimerCallback, context)
        if !isTLS {
            readEvent = event_new(
                loop.base, bufferevent_getfd(bufferevent), Int16(EV_READ | EV_PERSIST),
                connectionSocketReadCallback, context)
        }
        guard timer != nil, isTLS || readEvent != nil else {
            perform(machine.close())
            return
        }
        bufferevent_setcb(
            bufferevent, connectionReadCallback, connectionWriteCallback,
            connectionEventCallback, context)
        if let readEvent {
            event_add(readEvent, nil)
        } else {
            bufferevent_setwatermark(bufferevent, Int16(EV_READ), 0, ConnectionMachine.readHighWatermark)
            bufferevent_enable(bufferevent, Int16(EV_READ))
        }
        perform(machine.start())
    }

    // MARK: - Performing the machine's actions

    /// Performs `actions`: the timer, the idle lists, then the step.
    private func perform(_ actions: ConnectionMachine.Actions) {
        performTimerAndIdle(actions)
        perform(actions.step)
    }

    /// Performs `actions`, whose `.write` writes `answer`.
    private func perform(_ actions: ConnectionMachine.Actions, answer: HTTPResponse) {
        performTimerAndIdle(actions)
        if case .write(let framing) = actions.step {
            write(answer, framing)
        } else {
            perform(actions.step)
        }
    }

    private func performTimerAndIdle(_ actions: ConnectionMachine.Actions) {
        if let mode = actions.timer { arm(mode) }
        if let idle = actions.idle {
            if idle { listIdle() } else { unlistIdle() }
        }
    }

    private func perform(_ step: ConnectionMachine.Step) {
        switch step {
        case .none:
            break
        case .dispatch(let sequence):
            dispatch(machine.takeRequest(), sequence: sequence)
        case .decideContinue(let clientWaiting):
            decideContinue(clientWaiting: clientWaiting)
        case .write:
            preconditionFailure("only responseReady and answeredBeforeBody write, with their answer")
        case .writeProblem(let framing):
            guard let problem = machine.problem else { preconditionFailure("a problem answer without a problem") }
            write(loop.context.handler.response(for: problem), framing)
        case .parse:
            if !parsing { processInput() }
        case .discardInput:
            discardInput()
        case .tlsEstablished:
            if let tls = loop.tls, let bufferevent {
                tlsPeerSubject = tls.context.peerSubject(of: bufferevent)
            }
        case .linger(let closeNotify):
            linger(closeNotify: closeNotify)
        case .close(let closeNotify):
            close(closeNotify: closeNotify)
        case .closeFailedHandshake:
            loop.context.tlsHandshakeFailed()
            close(closeNotify: false)
        }
    }

    // MARK: - Reading

    /// Plain sockets: the socket is readable. Waiting for a request with nothing buffered (the
    /// common case), the bytes are parsed where `recv` put them, in the loop's read buffer, and
    /// only what the parser leaves is buffered; otherwise they are buffered and handled as the
    /// bufferevent's read callback would. An end of stream or an error goes where the
    /// bufferevent reported them.
    fileprivate func onSocketReadable() {
        guard let bufferevent else { return }
        let input = bufferevent_get_input(bufferevent)
        let received: Received
        switch machine.readable(buffered: evbuffer_get_length(input)) {
        case .parseInPlace:
            received = receiveAndParse(leavingRestIn: input)
            if received == .received {
                // The parser took every byte (a partial request, or requests answered at once),
                // so there is nothing to parse until the socket has more.
                perform(machine.inputExhausted())
                return
            }
        case .pause:
            // Pipelined bytes piled up while a request is handled: stop reading until the
            // parser has taken them (`resumeReadingIfDrained`).
            if let readEvent { event_del(readEvent) }
            return
        case .buffer:
            received = receive(into: input)
            if received == .received {
                onReadable()
                return
            }
        }
        switch received {
        case .received, .wouldBlock: break
        case .ended:
            if let readEvent { event_del(readEvent) }
            onEvent(Int16(BEV_EVENT_READING | BEV_EVENT_EOF))
        case .failed:
            onEvent(Int16(BEV_EVENT_READING | BEV_EVENT_ERROR))
        }
    }

    /// Reading resumes once the parser has taken the input below the high-water mark.
    private func resumeReadingIfDrained() {
        guard machine.readingPaused, let readEvent, let bufferevent else { return }
        if machine.inputTaken(buffered: evbuffer_get_length(bufferevent_get_input(bufferevent))) {
            event_add(readEvent, nil)
        }
    }

    fileprivate func onReadable() {
        perform(machine.inputArrived())
    }

    /// Parses buffered input until a request is dispatched, an error is answered, or the buffer
    /// is empty.
    private func processInput() {
        guard let bufferevent else { return }
        let input = bufferevent_get_input(bufferevent)
        parsing = true
        defer {
            parsing = false
            resumeReadingIfDrained()
        }
        while machine.phase == .reading {
            var chunk = iovec()
            if evbuffer_peek(input, -1, nil, &chunk, 1) > 0, chunk.iov_len > 0 {
                let bytes = UnsafeRawBufferPointer(start: chunk.iov_base, count: chunk.iov_len)
                let (consumed, actions) = machine.parse(bytes, moreBuffered: evbuffer_get_length(input) > chunk.iov_len)
                // Before the actions, which may close the connection and free `input`.
                if consumed > 0 { evbuffer_drain(input, consumed) }
                perform(actions)
                continue
            }
            // Mid-request with nothing buffered, read on at once (plain sockets): a larger
            // request (a 150-event interaction is 7.5 KB) otherwise waits for another pass of
            // the event loop. An end of stream or an error is left for the read event.
            if !isTLS && machine.requestStarted && receiveAndParse(leavingRestIn: input) == .received { continue }
            perform(machine.inputExhausted())
            return
        }
    }

    private static let continueLine: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"

    /// Asks the handler whether the request whose head asked for `100 Continue` may send its
    /// body (`HTTPHandler.continueDecision`): a final answer goes to the machine; otherwise the
    /// client, if it waits, is told to go on.
    private func decideContinue(clientWaiting: Bool) {
        if let (request, declaredBodyLength) = machine.headAwaitingBody {
            var head = request
            head.remoteAddress = remoteAddress
            head.isTLS = isTLS
            head.tlsPeerSubject = tlsPeerSubject
            if case .answer(let response) = loop.context.handler.continueDecision(
                for: head, declaredBodyLength: declaredBodyLength)
            {
                perform(machine.answeredBeforeBody(), answer: response)
                return
            }
        }
        if clientWaiting, let bufferevent {
            Self.continueLine.withUTF8Buffer { _ = bufferevent_write(bufferevent, $0.baseAddress, $0.count) }
        }
    }

    private enum Received { case received, wouldBlock, ended, failed }

    /// Reads what the socket holds now (at most the loop's read buffer) into that buffer.
    /// Plain sockets only (TLS reads go through OpenSSL).
    private func receive(_ body: (UnsafeRawBufferPointer) -> Void) -> Received {
        guard let bufferevent else { return .failed }
        let buffer = loop.readBuffer
        while true {
            let n = Glibc.recv(bufferevent_getfd(bufferevent), buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 {
                body(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                return .received
            }
            if n == 0 { return .ended }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed
            }
        }
    }

    /// Reads what the socket holds now into `input`.
    private func receive(into input: OpaquePointer?) -> Received {
        var added = true
        let received = receive { bytes in added = Self.append(bytes, to: input) }
        return added ? received : .failed
    }

    /// Reads what the socket holds now and parses it where it lies, until a request is
    /// dispatched (or an error answered, or the bytes end); what the parser did not take (a
    /// pipelined request) goes to `input`.
    private func receiveAndParse(leavingRestIn input: OpaquePointer?) -> Received {
        var added = true
        let received = receive { bytes in
            let wasParsing = parsing
            parsing = true  // an answer written at once must not start parsing `input` here
            defer { parsing = wasParsing }
            var offset = 0
            while machine.phase == .reading && offset < bytes.count {
                let (consumed, actions) = machine.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]), moreBuffered: false)
                offset += consumed
                perform(actions)
            }
            // Unless the answer closed the connection (and freed `input`).
            if offset < bytes.count && bufferevent != nil {
                added = Self.append(UnsafeRawBufferPointer(rebasing: bytes[offset...]), to: input)
            }
        }
        return added ? received : .failed
    }

    /// Adds `bytes` at the end of `input`. The bufferevent keeps that end frozen (only it adds
    /// there); this thread is the one that owns it, so the end is thawed just for this.
    private static func append(_ bytes: UnsafeRawBufferPointer, to input: OpaquePointer?) -> Bool {
        evbuffer_unfreeze(input, 0)
        defer { evbuffer_freeze(input, 0) }
        return evbuffer_add(input, bytes.baseAddress, bytes.count) == 0
    }

    private func discardInput() {
        guard let bufferevent else { return }
        let input = bufferevent_get_input(bufferevent)
        evbuffer_drain(input, evbuffer_get_length(input))
    }

    /// Lists the connection idle (it may be closed to make room for a new one), if it is not.
    private func listIdle() {
        guard !idleLinks.inLoop.listed else { return }
        let now = IdleConnections.now()
        loop.idle.insert(self, since: now)
        addressIdle?.insert(self, since: now)
    }

    private func unlistIdle() {
        guard idleLinks.inLoop.listed else { return }
        loop.idle.remove(self)
        addressIdle?.remove(self)
    }

    // MARK: - Handling

    private func dispatch(_ parsed: consuming HTTPRequestParser.ParsedRequest, sequence: UInt64) {
        var request = parsed.request
        request.remoteAddress = remoteAddress
        request.isTLS = isTLS
        request.tlsPeerSubject = tlsPeerSubject
        loop.context.requestStarted()
        loop.context.handler.handle(request, responder: HTTPResponder(connection: self, sequence: sequence))
    }

    /// Called by `HTTPResponder.send` on any thread.
    func respond(sequence: UInt64, _ response: HTTPResponse) {
        if loop.isCurrentThread {
            deliver(sequence: sequence, response)
        } else {
            // If the loop has stopped, this connection was force-closed and its request
            // already counted as finished: dropping the answer is right.
            loop.enqueue(.respond(self, sequence: sequence, response))
        }
    }

    /// Runs `work` on the loop thread (see `HTTPResponder.runOnConnectionThread`).
    func run(_ work: @escaping @Sendable () -> Void) {
        if loop.isCurrentThread || !loop.execute(work) { work() }
    }

    /// Writes the answer to request `sequence`, if it is the awaited one; on the loop thread.
    func deliver(sequence: UInt64, _ response: HTTPResponse) {
        let inputBuffered = bufferevent.map { evbuffer_get_length(bufferevent_get_input($0)) > 0 } ?? false
        let (settled, actions) = machine.responseReady(sequence: sequence, response, inputBuffered: inputBuffered)
        if settled { loop.context.requestFinished() }
        perform(actions, answer: response)
    }

    // MARK: - Writing

    private func write(_ response: HTTPResponse, _ framing: ConnectionMachine.Framing) {
        guard let bufferevent else { return }
        let sendBody = loop.encoder.encodeHead(
            response, close: framing.close, http10KeepAlive: framing.http10KeepAlive, isHead: framing.isHead,
            now: loop.now)
        let body = sendBody ? response.body : []
        // Most answers fit the socket's send buffer: hand them to the kernel at once. Going
        // through the output buffer instead costs two epoll_ctl calls (watch for writable, stop
        // watching) and a loop iteration per response.
        let written = isTLS ? 0 : writeNow(loop.encoder.head, body)
        if written < 0 {
            perform(machine.close())
            return
        }
        let head = loop.encoder.head
        if written < head.count {
            head.withUnsafeBytes { bytes in
                _ = bufferevent_write(bufferevent, bytes.baseAddress! + written, bytes.count - written)
            }
        }
        let bodyWritten = max(0, written - head.count)
        if bodyWritten < body.count {
            body.withUnsafeBytes { bytes in
                _ = bufferevent_write(bufferevent, bytes.baseAddress! + bodyWritten, bytes.count - bodyWritten)
            }
        }
        perform(machine.written(completely: written == head.count + body.count))
    }

    /// Writes `head` and `body` to the socket without blocking, if nothing is queued before them;
    /// returns the bytes the kernel took (0 when it would block or output is queued), or -1
    /// when the connection failed.
    private func writeNow(_ head: [UInt8], _ body: [UInt8]) -> Int {
        guard let bufferevent, evbuffer_get_length(bufferevent_get_output(bufferevent)) == 0 else { return 0 }
        let socket = bufferevent_getfd(bufferevent)
        return head.withUnsafeBytes { headBytes in
            body.withUnsafeBytes { bodyBytes in
                // A tuple, not an array: no allocation for the two iovecs of every response.
                var parts = (
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: headBytes.baseAddress), iov_len: headBytes.count),
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress), iov_len: bodyBytes.count)
                )
                while true {
                    let n = withUnsafeMutableBytes(of: &parts) { raw in
                        Glibc.writev(socket, raw.baseAddress!.assumingMemoryBound(to: iovec.self), bodyBytes.isEmpty ? 1 : 2)
                    }
                    if n >= 0 { return n }
                    switch errno {
                    case EINTR: continue
                    case EAGAIN, EWOULDBLOCK: return 0
                    default: return -1
                    }
                }
            }
        }
    }

    /// The output buffer drained.
    fileprivate func onWritten() {
        perform(machine.outputDrained())
    }

    /// After an answer that ends the connection: the client reads it, then the end of stream,
    /// while what it still sends is read and dropped.
    private func linger(closeNotify: Bool) {
        guard let bufferevent else { return }
        if closeNotify {
            // The client reads close_notify after the answer, then the TCP end of stream.
            TLSContext.sendCloseNotify(bufferevent)
        }
        Glibc.shutdown(bufferevent_getfd(bufferevent), Int32(SHUT_WR))
        discardInput()
        if let readEvent {
            event_add(readEvent, nil)
        } else {
            bufferevent_setwatermark(bufferevent, Int16(EV_READ), 0, 0)
            bufferevent_enable(bufferevent, Int16(EV_READ))
        }
    }

    // MARK: - Events and timers

    fileprivate func onEvent(_ events: Int16) {
        let events = Int32(events)
        let event: ConnectionMachine.StreamEvent =
            if events & BEV_EVENT_CONNECTED != 0 { .connected } else if events & BEV_EVENT_EOF != 0 && events & BEV_EVENT_ERROR == 0 {
                .endOfStream
            } else { .failed }
        perform(machine.streamEvent(event))
    }

    private func arm(_ mode: ConnectionMachine.Timer) {
        guard let timer else { return }
        let duration: UnsafePointer<timeval>
        switch mode {
        case .off:
            event_del(timer)
            return
        case .idle: duration = loop.idleTimeout
        case .header: duration = loop.headerTimeout
        case .handshake, .request: duration = loop.requestTimeout
        case .write: duration = loop.writeTimeout
        case .linger: duration = loop.lingerTimeout
        }
        event_add(timer, duration)
    }

    fileprivate func onTimer() {
        perform(machine.timerFired())
    }

    // MARK: - Closing

    /// Shutdown began: close if idle or lingering, else close after the current response.
    func drain() {
        perform(machine.drain())
    }

    /// Whether a request has begun on the connection and is not complete (an idle connection
    /// receiving one: its eviction is counted apart).
    var requestBegun: Bool { machine.requestStarted }

    /// Closes an idle connection (one receiving a request included) to make room for a new one.
    func evict() {
        perform(machine.close())
    }

    /// Closes now and settles an unanswered request (the loop is stopping).
    func forceClose() {
        let (settled, actions) = machine.forceClose()
        if settled { loop.context.requestFinished() }
        perform(actions)
    }

    /// Frees the socket, the bufferevent and the timer. Performed once: the machine closes once.
    private func close(closeNotify: Bool) {
        if let timer { event_free(timer) }
        timer = nil
        if let readEvent { event_free(readEvent) }
        readEvent = nil
        if let bufferevent {
            // close_notify only after a clean exchange (the machine's word), and not over unsent
            // output (the write timeout), which it would cut into.
            if closeNotify && evbuffer_get_length(bufferevent_get_output(bufferevent)) == 0 {
                TLSContext.sendCloseNotify(bufferevent)
            }
            bufferevent_free(bufferevent)
        }
        bufferevent = nil
        unlistIdle()
        loop.context.connectionClosed(from: peerAddress)
        loop.remove(self)
    }
}

// C callbacks: plain functions (never actor-isolated). The context is the unretained
// connection, valid while its bufferevent and timer exist (see `Connection`).

private func connectionReadCallback(_ bufferevent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue().onReadable()
}

private func connectionSocketReadCallback(_ socket: Int32, _ events: Int16, _ context: UnsafeMutableRawPointer?) {
    Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue().onSocketReadable()
}

private func connectionWriteCallback(_ bufferevent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue().onWritten()
}

private func connectionEventCallback(
    _ bufferevent: OpaquePointer?, _ events: Int16, _ context: UnsafeMutableRawPointer?
) {
    Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue().onEvent(events)
}

private func connectionTimerCallback(_ socket: Int32, _ events: Int16, _ context: UnsafeMutableRawPointer?) {
    Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue().onTimer()
}
