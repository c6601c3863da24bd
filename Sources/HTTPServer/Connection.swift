internal import CLibEvent
internal import Glibc

/// One client connection: a bufferevent, a timer, and the parser between them.
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
/// Ownership: the loop's connection table owns the object from accept to `close()`. libevent
/// callbacks get an unretained pointer to it, which is sound because `close()` frees the
/// bufferevent (clearing its callbacks), the read event and the timer before it leaves the table. An
/// `HTTPResponder` may keep the object alive longer; it is then closed and inert.
///
/// One request is handled at a time: while the handler has one, later (pipelined) bytes wait in
/// the input buffer, bounded by its high-water mark, and the next request is parsed only after
/// the response has been flushed, so responses go out in request order.
final class Connection: @unchecked Sendable {
    // @unchecked: every mutable property is used only on `loop`'s thread; other threads only
    // hold a reference (inside an HTTPResponder) and call `respond`, which hands the work over.

    private enum State {
        /// Reading (and parsing) the next request.
        case reading
        /// The handler has the request; waiting for its answer.
        case handling
        /// A response is queued; waiting for it to drain.
        case writing
        /// Answered a protocol error and shut the write side; discarding input until the
        /// client closes, so it reads the answer instead of a reset.
        case lingering
        case closed
    }

    private enum TimerMode {
        case none, handshake, idle, request, write, linger
    }

    /// The input buffered ahead of the parser (pipelined requests) before reading pauses.
    static let readHighWatermark = 64 << 10

    let loop: EventLoop
    let remoteAddress: String
    /// What the per-address cap counts this connection under (nil: not an IP socket).
    let peerAddress: PeerAddress?
    /// With a per-address cap: the loop's list of connections from `peerAddress`.
    let addressIdle: IdleConnections?
    /// Its places in the loop's idle lists while it has no request in progress.
    var idleLinks = IdleConnections.ConnectionLinks()
    private var bufferevent: OpaquePointer?
    /// Plain sockets: the persistent read event (see the type's notes); nil over TLS.
    private var readEvent: OpaquePointer?
    /// Plain sockets: reading paused because the input reached `readHighWatermark`.
    private var readPaused = false
    private var timer: OpaquePointer?
    private var timerMode = TimerMode.none
    private var parser: HTTPRequestParser
    private var state = State.reading

    /// Numbers the requests on this connection, so a late or repeated answer is recognised.
    private var sequence: UInt64 = 0
    /// The request the handler has and has not answered (kept after a close, so the in-flight
    /// count drops when the answer finally comes).
    private var awaitingResponse: UInt64?
    /// A request was handed to the handler: from then on the wait for the next one is idle
    /// time (`idleTimeout`); until then it counts against the request timeout.
    private var servedRequest = false
    private var keepAlive = true
    private var isHTTP10 = false
    private var isHeadRequest = false
    private var closeAfterWrite = false
    private var lingerAfterWrite = false
    /// The client closed its side (EOF): finish what is buffered, then close.
    private var peerClosed = false
    /// `processInput` is running (further up the stack).
    private var parsing = false

    /// Whether the connection is TLS (the loop has a TLS context).
    private let isTLS: Bool
    /// TLS only: the handshake has not completed yet.
    private var handshaking: Bool
    /// TLS only: the verified client certificate's subject, once the handshake completed.
    private var tlsPeerSubject: String?
    /// TLS only: close_notify was sent, or must not be (the session failed).
    private var tlsShutDown = false

    init(loop: EventLoop, bufferevent: OpaquePointer, remoteAddress: String, peerAddress: PeerAddress?,
         addressIdle: IdleConnections?) {
        self.loop = loop
        self.bufferevent = bufferevent
        self.remoteAddress = remoteAddress
        self.peerAddress = peerAddress
        self.addressIdle = addressIdle
        parser = HTTPRequestParser(limits: loop.context.limits)
        isTLS = loop.tls != nil
        handshaking = isTLS
    }

    /// Installs the callbacks and starts reading. Called once, right after accept.
    func start() {
        guard let bufferevent else { return }
        // Unretained: the loop's table owns this object for as long as these handles exist.
        let context = Unmanaged.passUnretained(self).toOpaque()
        timer = event_new(loop.base, -1, 0, connectionTimerCallback, context)
        if !isTLS {
            readEvent = event_new(loop.base, bufferevent_getfd(bufferevent), Int16(EV_READ | EV_PERSIST),
                                  connectionSocketReadCallback, context)
        }
        guard timer != nil, isTLS || readEvent != nil else {
            close()
            return
        }
        bufferevent_setcb(
            bufferevent, connectionReadCallback, connectionWriteCallback,
            connectionEventCallback, context)
        if let readEvent {
            event_add(readEvent, nil)
        } else {
            bufferevent_setwatermark(bufferevent, Int16(EV_READ), 0, Self.readHighWatermark)
            bufferevent_enable(bufferevent, Int16(EV_READ))
        }
        // The first request must arrive within the request timeout of the connection's opening
        // (after the handshake, over TLS): a socket that never sends a byte holds a place for
        // that long, not for the idle timeout.
        arm(handshaking ? .handshake : .request)
        listIdle()
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
        if state == .reading && evbuffer_get_length(input) == 0 {
            received = receiveAndParse(leavingRestIn: input)
            if received == .received {
                // Still reading: the parser took every byte (a partial request, or requests
                // answered at once), so there is nothing to parse until the socket has more.
                if state == .reading { waitForInput() }
                return
            }
        } else {
            if state != .lingering && evbuffer_get_length(input) >= Self.readHighWatermark {
                // Pipelined bytes piled up while a request is handled: stop reading until the
                // parser has taken them (`resumeReadingIfDrained`).
                if let readEvent { event_del(readEvent) }
                readPaused = true
                return
            }
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
        guard readPaused, let readEvent, let bufferevent,
              evbuffer_get_length(bufferevent_get_input(bufferevent)) < Self.readHighWatermark else { return }
        readPaused = false
        event_add(readEvent, nil)
    }

    fileprivate func onReadable() {
        switch state {
        case .reading:
            processInput()
        case .lingering:
            discardInput()
        case .handling, .writing, .closed:
            break
        }
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
        while state == .reading {
            var chunk = iovec()
            if evbuffer_peek(input, -1, nil, &chunk, 1) > 0, chunk.iov_len > 0 {
                let bytes = UnsafeRawBufferPointer(start: chunk.iov_base, count: chunk.iov_len)
                parseStep(bytes, moreBuffered: evbuffer_get_length(input) > chunk.iov_len) { evbuffer_drain(input, $0) }
                continue
            }
            // Mid-request with nothing buffered, read on at once (plain sockets): a larger
            // request (a 150-event interaction is 7.5 KB) otherwise waits for another pass of
            // the event loop. An end of stream or an error is left for the read event.
            if !isTLS && parser.hasStarted && receiveAndParse(leavingRestIn: input) == .received { continue }
            waitForInput()
            return
        }
    }

    /// Parses what `bytes` hold until a request is dispatched, an error is answered, or the
    /// parser needs more. `take` is told how many bytes the parser took before the outcome is
    /// acted on (which may close the connection and free its buffers). `moreBuffered`: more
    /// input follows `bytes`.
    private func parseStep(_ bytes: UnsafeRawBufferPointer, moreBuffered: Bool, take: (Int) -> Void) {
        let step = parser.parse(bytes)
        if step.consumed > 0 { take(step.consumed) }
        switch step.outcome {
        case .needMore:
            // The parser keeps partial lines itself, so it took the whole chunk.
            precondition(step.consumed == bytes.count, "parser left bytes while needing more")
        case .expectContinue:
            if let (answer, isHead) = answerBeforeBody() {
                answerAndClose(answer, isHead: isHead)
            } else if step.consumed == bytes.count && !moreBuffered, let bufferevent {
                // Only if the client is waiting: if body bytes already came, it did not wait.
                Self.continueLine.withUTF8Buffer { _ = bufferevent_write(bufferevent, $0.baseAddress, $0.count) }
            }
        case .request(let parsed):
            dispatch(parsed)
        case .error(let error):
            fail(error)
        }
    }

    private static let continueLine: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"

    /// The handler's final answer to a request that announced its body, if it wants none
    /// (`HTTPHandler.continueDecision`), and whether the request is a HEAD.
    private func answerBeforeBody() -> (HTTPResponse, isHead: Bool)? {
        guard let (request, declaredBodyLength) = parser.headAwaitingBody else { return nil }
        var head = request
        head.remoteAddress = remoteAddress
        head.isTLS = isTLS
        head.tlsPeerSubject = tlsPeerSubject
        switch loop.context.handler.continueDecision(for: head, declaredBodyLength: declaredBodyLength) {
        case .proceed: return nil
        case .answer(let response): return (response, head.method == "HEAD")
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
            while state == .reading && offset < bytes.count {
                parseStep(UnsafeRawBufferPointer(rebasing: bytes[offset...]), moreBuffered: false) { offset += $0 }
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

    /// The input buffer is empty: close, or time the wait.
    private func waitForInput() {
        let started = parser.hasStarted
        if peerClosed || (loop.draining && !started) {
            close()
            return
        }
        // Until a request has begun the connection is idle: it may be closed to make room.
        if started { unlistIdle() } else { listIdle() }
        // A request, and the wait for a connection's first, are timed by the request timeout
        // (from the first byte, from the opening); the wait between requests by the idle one.
        let mode: TimerMode = started || !servedRequest ? .request : .idle
        if timerMode != mode { arm(mode) }
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

    private func dispatch(_ parsed: consuming HTTPRequestParser.ParsedRequest) {
        arm(.none)
        unlistIdle()
        state = .handling
        servedRequest = true
        sequence &+= 1
        awaitingResponse = sequence
        keepAlive = parsed.keepAlive
        isHTTP10 = parsed.minorVersion == 0
        var request = parsed.request
        isHeadRequest = request.method == "HEAD"
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
        guard awaitingResponse == sequence else { return }
        awaitingResponse = nil
        loop.context.requestFinished()
        guard state == .handling, let bufferevent else { return }
        // A client that half-closed after pipelining still gets an answer to each buffered
        // request; the connection closes after the last one.
        let lastFromClosedPeer = peerClosed && evbuffer_get_length(bufferevent_get_input(bufferevent)) == 0
        let close = !keepAlive || lastFromClosedPeer || loop.draining || Self.asksToClose(response)
        write(response, close: close, linger: false)
    }

    private static func asksToClose(_ response: HTTPResponse) -> Bool {
        guard let connection = response.headers["Connection"] else { return false }
        return connection.split(separator: ",").contains { $0.trimmingOWS().equalsIgnoringASCIICase("close") }
    }

    /// Answers a protocol error; the connection closes once the answer is flushed.
    private func fail(_ error: HTTPProtocolError) {
        answerAndClose(loop.context.handler.response(for: error), isHead: false)
    }

    /// Answers in the middle of a request, which is not read further: the connection closes
    /// once the answer is flushed, discarding what the client still sends (lingering) so that
    /// it reads the answer rather than a reset.
    private func answerAndClose(_ response: HTTPResponse, isHead: Bool) {
        arm(.none)
        isHeadRequest = isHead
        isHTTP10 = false
        write(response, close: true, linger: true)
    }

    // MARK: - Writing

    private func write(_ response: HTTPResponse, close: Bool, linger: Bool) {
        guard let bufferevent else { return }
        unlistIdle()
        let sendBody = loop.encoder.encodeHead(
            response, close: close, http10KeepAlive: isHTTP10 && !close, isHead: isHeadRequest, now: loop.now)
        let body = sendBody ? response.body : []
        closeAfterWrite = close
        lingerAfterWrite = linger
        // Most answers fit the socket's send buffer: hand them to the kernel at once. Going
        // through the output buffer instead costs two epoll_ctl calls (watch for writable, stop
        // watching) and a loop iteration per response.
        let written = isTLS ? 0 : writeNow(loop.encoder.head, body)
        if written < 0 {
            self.close()
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
        state = .writing
        if written == head.count + body.count {
            writeCompleted()
        } else {
            arm(.write)
        }
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
                var parts = (iovec(iov_base: UnsafeMutableRawPointer(mutating: headBytes.baseAddress), iov_len: headBytes.count),
                             iovec(iov_base: UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress), iov_len: bodyBytes.count))
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
        guard state == .writing else { return }
        writeCompleted()
    }

    /// The whole response is with the kernel: close, or read the next request. When the answer
    /// was written from inside `processInput` (a request answered at once), its loop goes on
    /// parsing; otherwise parsing resumes here.
    private func writeCompleted() {
        arm(.none)
        if closeAfterWrite {
            if lingerAfterWrite { startLingering() } else { close() }
            return
        }
        state = .reading
        if !parsing { processInput() }
    }

    private func startLingering() {
        guard let bufferevent, !peerClosed else {
            close()
            return
        }
        state = .lingering
        // The answer is with the kernel: making room may cut the courtesy short.
        listIdle()
        if isTLS {
            // The client reads close_notify after the answer, then the TCP end of stream.
            TLSContext.sendCloseNotify(bufferevent)
            tlsShutDown = true
        }
        Glibc.shutdown(bufferevent_getfd(bufferevent), Int32(SHUT_WR))
        discardInput()
        if let readEvent {
            readPaused = false
            event_add(readEvent, nil)
        } else {
            bufferevent_setwatermark(bufferevent, Int16(EV_READ), 0, 0)
            bufferevent_enable(bufferevent, Int16(EV_READ))
        }
        arm(.linger)
    }

    // MARK: - Events and timers

    fileprivate func onEvent(_ events: Int16) {
        let events = Int32(events)
        if handshaking {
            if events & BEV_EVENT_CONNECTED != 0 {
                handshakeCompleted()
            } else {
                // A refused version, cipher or certificate, a non-TLS client, or an EOF.
                tlsShutDown = true
                loop.context.tlsHandshakeFailed()
                close()
            }
            return
        }
        if events & BEV_EVENT_EOF != 0 && events & BEV_EVENT_ERROR == 0 {
            peerClosed = true
            switch state {
            case .reading: processInput()
            case .lingering: close()
            case .handling, .writing, .closed: break
            }
        } else {
            tlsShutDown = true
            close()
        }
    }

    private func handshakeCompleted() {
        handshaking = false
        if let tls = loop.tls, let bufferevent {
            tlsPeerSubject = tls.context.peerSubject(of: bufferevent)
        }
        arm(.request)
    }

    private func arm(_ mode: TimerMode) {
        guard let timer, !(mode == .none && timerMode == .none) else { return }
        timerMode = mode
        let duration: UnsafePointer<timeval>
        switch mode {
        case .none:
            event_del(timer)
            return
        case .idle: duration = loop.idleTimeout
        case .handshake, .request: duration = loop.requestTimeout
        case .write: duration = loop.writeTimeout
        case .linger: duration = loop.lingerTimeout
        }
        event_add(timer, duration)
    }

    fileprivate func onTimer() {
        let mode = timerMode
        timerMode = .none
        switch mode {
        case .request:
            // A connection that never began a request is closed without an answer.
            if state == .reading { if parser.hasStarted { fail(.requestTimeout) } else { close() } }
        case .handshake:
            tlsShutDown = true
            loop.context.tlsHandshakeFailed()
            close()
        case .idle, .write, .linger:
            close()
        case .none:
            break
        }
    }

    // MARK: - Closing

    /// Shutdown began: close if idle or lingering, else close after the current response.
    func drain() {
        switch state {
        case .reading where !parser.hasStarted:
            close()
        case .writing:
            closeAfterWrite = true
        case .lingering:
            close()
        default:
            break
        }
    }

    /// Closes an idle connection to make room for a new one.
    func evict() {
        close()
    }

    /// Closes now and settles an unanswered request (the loop is stopping).
    func forceClose() {
        if awaitingResponse != nil {
            awaitingResponse = nil
            loop.context.requestFinished()
        }
        close()
    }

    /// Frees the socket, the bufferevent and the timer; idempotent.
    private func close() {
        guard state != .closed else { return }
        state = .closed
        if let timer { event_free(timer) }
        timer = nil
        timerMode = .none
        if let readEvent { event_free(readEvent) }
        readEvent = nil
        if let bufferevent {
            // close_notify only after a clean exchange: not mid-handshake, not after an error,
            // not over unsent output (the write timeout), which it would cut into.
            if isTLS && !handshaking && !tlsShutDown && evbuffer_get_length(bufferevent_get_output(bufferevent)) == 0 {
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
