/// The protocol state of one connection, as a value: events in, actions out.
///
/// It holds the request parser and decides everything about the connection's HTTP/1.1 life:
/// which request goes to the handler and when, how its answer is framed, what follows the
/// answer (the next request, a close, a linger), which timer runs, whether the connection is
/// idle (may be closed to make room: nothing handed to the handler, nothing being written), and
/// when reading pauses. It touches no socket, buffer, timer or clock: `Connection` tells it
/// what happened (bytes arrived, an answer is ready, the output drained, the peer closed, a
/// timer fired, ...) and performs the `Actions` it returns (libevent calls, writes, handler
/// calls), so every rule here is unit-tested without a socket.
///
/// One request is handled at a time: the next is parsed only after the answer to the previous
/// one has been handed to the kernel, so answers go out in request order, and an answer for
/// any request but the one awaited (a late or repeated `send`) is ignored.
struct ConnectionMachine {
    enum Phase: Equatable {
        /// TLS only: the handshake has not completed yet.
        case handshaking
        /// Reading (and parsing) the next request.
        case reading
        /// The handler has the request; waiting for its answer.
        case handling
        /// An answer is queued; waiting for it to drain.
        case writing
        /// Answered mid-request and shut the write side; discarding input until the client
        /// closes, so that it reads the answer instead of a reset.
        case lingering
        case closed
    }

    /// What the connection's one timer is armed for.
    enum Timer: Equatable {
        case off
        /// TLS: the handshake must complete within the request timeout.
        case handshake
        /// Between requests: the idle (keep-alive) timeout.
        case idle
        /// A request's head, from its first byte (for a connection's first request, from the
        /// opening): the header timeout.
        case header
        /// A request's body, from the end of its head: the request timeout.
        case request
        /// An answer that did not fit the socket at once: the write timeout.
        case write
        /// Discarding input after an answer that ends the connection: the linger timeout.
        case linger
    }

    /// How an answer's head is written (see `HTTPResponseEncoder.encodeHead`).
    struct Framing: Equatable {
        /// The connection closes after this answer (`Connection: close`).
        var close: Bool
        /// An HTTP/1.0 request that keeps the connection (`Connection: keep-alive`).
        var http10KeepAlive: Bool
        /// The request was a HEAD: no body is sent.
        var isHead: Bool
    }

    /// The main thing to do after an event (see `Actions`). Plain values only: an event's
    /// actions are copied and dropped without reference counting.
    enum Step: Equatable {
        case none
        /// Hand `takeRequest()` to the handler; its answer is awaited as number `sequence`.
        case dispatch(sequence: UInt64)
        /// The head asks for `100 Continue`: ask the handler (`continueDecision`) about
        /// `headAwaitingBody`; on `.answer` report `answeredBeforeBody`, on `.proceed` send
        /// `100 Continue` if `clientWaiting` (no body byte came yet).
        case decideContinue(clientWaiting: Bool)
        /// Write the answer the event brought (`responseReady`, `answeredBeforeBody`), then
        /// report `written(completely:)`.
        case write(Framing)
        /// Write the handler's rendering of `problem` (`HTTPHandler.response(for:)`), then
        /// report `written(completely:)`.
        case writeProblem(Framing)
        /// Parse what is buffered (unless a parse loop further up the stack will go on).
        case parse
        /// Drop what is buffered.
        case discardInput
        /// The handshake completed: read the peer's certificate subject.
        case tlsEstablished
        /// Send close_notify if `closeNotify`, shut the write side, drop what is buffered and
        /// read (and drop) everything that comes, with no high-water mark.
        case linger(closeNotify: Bool)
        /// Free the connection. `closeNotify`: the TLS session is healthy; send close_notify
        /// if no output is left unsent (which it would cut into).
        case close(closeNotify: Bool)
        /// The TLS handshake failed or timed out: count it and free the connection.
        case closeFailedHandshake
    }

    /// What `Connection` does after an event, in this order: arm the timer, list or unlist the
    /// connection as idle, then the step (which may call the handler, and so come back with
    /// further events).
    struct Actions: Equatable {
        /// Arm the timer for this mode (`.off`: disarm it); nil leaves it as it is.
        var timer: Timer?
        /// List the connection as idle (true) or take it off the lists (false); nil: as is.
        /// Idle here means it may be closed to make room: it has nothing the handler holds and
        /// nothing being written (waiting for a request, receiving one, lingering).
        var idle: Bool?
        var step: Step

        init(timer: Timer? = nil, idle: Bool? = nil, _ step: Step = .none) {
            self.timer = timer
            self.idle = idle
            self.step = step
        }

        static var none: Actions { Actions() }
    }

    /// What to do with a readable plain socket (`readable(buffered:)`).
    enum Read: Equatable {
        /// Nothing is buffered and a request is awaited: parse the bytes where they are read.
        case parseInPlace
        /// Read into the input buffer, then report `inputArrived()`.
        case buffer
        /// The input buffer is at the high-water mark: stop reading until `inputTaken`.
        case pause
    }

    /// What follows the answer being written.
    private enum AfterWrite {
        case readNext, close, linger
    }

    /// The input buffered ahead of the parser (pipelined requests) before reading pauses.
    static let readHighWatermark = 64 << 10

    private(set) var phase: Phase
    /// What the timer is armed for now.
    private(set) var timer = Timer.off
    private var parser: HTTPRequestParser
    private let isTLS: Bool

    /// Numbers the requests on this connection (0: none dispatched yet). Once a request has
    /// been dispatched, the wait for the next one is idle time; until then it counts against
    /// the header timeout.
    private var sequence: UInt64 = 0
    /// The request the handler has and has not answered (kept after a close, so that the
    /// in-flight count drops when the answer finally comes).
    private var awaiting: UInt64?
    /// Of the request being answered: whether the connection may stay open after it.
    private var keepAlive = true
    private var isHTTP10 = false
    private var isHead = false
    private var afterWrite = AfterWrite.readNext
    /// The client closed its side (EOF): finish what is buffered, then close.
    private var peerClosed = false
    /// The server is shutting down: close once idle.
    private var draining = false
    /// Plain sockets: reading paused because the input reached `readHighWatermark`.
    private(set) var readingPaused = false
    /// After `.dispatch`: the request, until `takeRequest()`.
    private var dispatched: HTTPRequestParser.ParsedRequest?
    /// The protocol error being answered (the connection closes after the answer).
    private(set) var problem: HTTPProtocolError?

    init(isTLS: Bool, limits: HTTPRequestParser.Limits) {
        self.isTLS = isTLS
        phase = isTLS ? .handshaking : .reading
        parser = HTTPRequestParser(limits: limits)
    }

    /// Whether a request has begun and is not complete (see `HTTPRequestParser.hasStarted`).
    var requestStarted: Bool { parser.hasStarted }

    /// After `.decideContinue`: the head of the request whose body is awaited.
    var headAwaitingBody: (request: HTTPRequest, declaredBodyLength: Int?)? { parser.headAwaitingBody }

    /// After `.dispatch`: the request to hand to the handler (once).
    mutating func takeRequest() -> HTTPRequestParser.ParsedRequest {
        guard let request = dispatched.take() else { preconditionFailure("no request was dispatched") }
        return request
    }

    // MARK: - Events

    /// The connection was accepted. The first request's head must arrive within the header
    /// timeout of the connection's opening (after the handshake, over TLS): a socket that never
    /// sends a byte holds a place for that long, not for the idle timeout.
    mutating func start() -> Actions {
        Actions(timer: arm(phase == .handshaking ? .handshake : .header), idle: true)
    }

    /// A plain socket is readable; `buffered` bytes wait in the input buffer.
    mutating func readable(buffered: Int) -> Read {
        if phase == .reading && buffered == 0 { return .parseInPlace }
        if phase != .lingering && buffered >= Self.readHighWatermark {
            // Pipelined bytes piled up while a request is handled.
            readingPaused = true
            return .pause
        }
        return .buffer
    }

    /// Bytes were added to the input buffer.
    func inputArrived() -> Actions {
        switch phase {
        case .reading: Actions(.parse)
        case .lingering: Actions(.discardInput)
        case .handshaking, .handling, .writing, .closed: .none
        }
    }

    /// Parses what `bytes` hold, up to a complete request, an error, or their end. `consumed`:
    /// the bytes the parser took, to drop from the input before the actions are performed
    /// (which may free it). `moreBuffered`: more input follows `bytes`.
    mutating func parse(_ bytes: UnsafeRawBufferPointer, moreBuffered: Bool) -> (consumed: Int, actions: Actions) {
        let step = parser.parse(bytes)
        switch step.outcome {
        case .needMore:
            // The parser keeps partial lines itself, so it took the whole chunk.
            precondition(step.consumed == bytes.count, "parser left bytes while needing more")
            return (step.consumed, .none)
        case .expectContinue:
            // The client waits for `100 Continue` only if no body byte came yet.
            return (step.consumed, Actions(.decideContinue(clientWaiting: step.consumed == bytes.count && !moreBuffered)))
        case .request(let parsed):
            return (step.consumed, dispatch(parsed))
        case .error(let error):
            return (step.consumed, answerProblem(error))
        }
    }

    /// The buffered input is used up (the parser took all of it) and the socket has no more.
    mutating func inputExhausted() -> Actions {
        guard phase == .reading else { return .none }
        let started = parser.hasStarted
        if peerClosed || (draining && !started) { return close() }
        // A head, and the wait for a connection's first, are timed by the header timeout (from
        // the first byte, from the opening); a body by the request timeout (from the head's
        // end); the wait between requests by the idle one. Until its request is complete and
        // handed over, the connection may be closed to make room: a client sending its request
        // slowly holds its place no more firmly than one sending nothing.
        let mode: Timer = parser.isReadingBody ? .request : started || sequence == 0 ? .header : .idle
        return Actions(timer: timer == mode ? nil : arm(mode), idle: true)
    }

    /// The parser took input; `buffered` bytes are left. True: resume reading.
    mutating func inputTaken(buffered: Int) -> Bool {
        guard readingPaused, buffered < Self.readHighWatermark else { return false }
        readingPaused = false
        return true
    }

    /// The handler answered a `100-continue` head with a final answer: it is written, no body
    /// is read, and the connection closes after it.
    mutating func answeredBeforeBody() -> Actions {
        let head = parser.headAwaitingBody?.request.method == "HEAD"
        return answerAndClose(head: head) { .write($0) }
    }

    /// The handler's answer to request `sequence`. `settled`: it was the awaited one (the
    /// in-flight count drops, whether or not the connection is still open to write it).
    /// `inputBuffered`: bytes (a pipelined request) wait in the input buffer.
    mutating func responseReady(
        sequence: UInt64, _ response: borrowing HTTPResponse,
        inputBuffered: Bool
    ) -> (settled: Bool, actions: Actions) {
        guard awaiting == sequence else { return (false, .none) }
        awaiting = nil
        guard phase == .handling else { return (true, .none) }
        // A client that half-closed after pipelining still gets an answer to each buffered
        // request; the connection closes after the last one.
        let lastFromClosedPeer = peerClosed && !inputBuffered
        let close = !keepAlive || lastFromClosedPeer || draining || Self.asksToClose(response)
        afterWrite = close ? .close : .readNext
        return (true, Actions(idle: false, .write(framing(close: close))))
    }

    /// The answer was written: completely (the kernel has it all), or partly (the rest is
    /// queued in the output buffer, `outputDrained` follows).
    mutating func written(completely: Bool) -> Actions {
        guard phase != .closed else { return .none }
        phase = .writing
        return completely ? writeCompleted() : Actions(timer: arm(.write))
    }

    /// The output buffer drained.
    mutating func outputDrained() -> Actions {
        guard phase == .writing else { return .none }
        return writeCompleted()
    }

    /// What libevent reported on the stream.
    enum StreamEvent: Equatable {
        /// TLS: the handshake completed.
        case connected
        /// The peer closed its side (end of stream, no error).
        case endOfStream
        /// A read or write failed (over TLS also a failed or refused handshake).
        case failed
    }

    mutating func streamEvent(_ event: StreamEvent) -> Actions {
        if phase == .handshaking {
            guard event == .connected else {
                // A refused version, cipher or certificate, a non-TLS client, or an EOF.
                return closeFailedHandshake()
            }
            phase = .reading
            return Actions(timer: arm(.header), .tlsEstablished)
        }
        guard event == .endOfStream else { return close(closeNotify: false) }
        peerClosed = true
        switch phase {
        case .reading: return Actions(.parse)
        case .lingering: return close()
        case .handshaking, .handling, .writing, .closed: return .none
        }
    }

    /// The timer fired.
    mutating func timerFired() -> Actions {
        let mode = timer
        timer = .off
        switch mode {
        case .header, .request:
            // A connection that never began a request is closed without an answer.
            guard phase == .reading else { return .none }
            return parser.hasStarted ? answerProblem(.requestTimeout) : close()
        case .handshake:
            return closeFailedHandshake()
        case .idle, .write, .linger:
            return close()
        case .off:
            return .none
        }
    }

    /// Shutdown began: close if idle or lingering, else close after the current answer.
    mutating func drain() -> Actions {
        draining = true
        switch phase {
        case .handshaking: return close()
        case .reading where !parser.hasStarted: return close()
        case .writing:
            if afterWrite == .readNext { afterWrite = .close }
            return .none
        case .lingering: return close()
        case .reading, .handling, .closed: return .none
        }
    }

    /// The server closes the connection now (to make room, or after a failed read, write or
    /// set-up). Idempotent.
    mutating func close() -> Actions {
        close(closeNotify: isTLS && phase != .handshaking && phase != .lingering)
    }

    /// Closes now and settles an unanswered request (the loop is stopping). `settled`: a
    /// request was awaited; the in-flight count drops.
    mutating func forceClose() -> (settled: Bool, actions: Actions) {
        let settled = awaiting != nil
        awaiting = nil
        return (settled, close())
    }

    // MARK: - Transitions

    private mutating func dispatch(_ parsed: consuming HTTPRequestParser.ParsedRequest) -> Actions {
        phase = .handling
        sequence &+= 1
        awaiting = sequence
        keepAlive = parsed.keepAlive
        isHTTP10 = parsed.minorVersion == 0
        isHead = parsed.request.method == "HEAD"
        dispatched = consume parsed
        return Actions(timer: arm(.off), idle: false, .dispatch(sequence: sequence))
    }

    /// Answers a protocol error; the connection closes once the answer is flushed.
    private mutating func answerProblem(_ error: HTTPProtocolError) -> Actions {
        problem = error
        return answerAndClose(head: false) { .writeProblem($0) }
    }

    /// Answers in the middle of a request, which is not read further: the connection closes
    /// once the answer is flushed, discarding what the client still sends (lingering) so that
    /// it reads the answer rather than a reset.
    private mutating func answerAndClose(head: Bool, _ write: (Framing) -> Step) -> Actions {
        isHead = head
        isHTTP10 = false
        afterWrite = .linger
        return Actions(timer: arm(.off), idle: false, write(framing(close: true)))
    }

    private func framing(close: Bool) -> Framing {
        Framing(close: close, http10KeepAlive: isHTTP10 && !close, isHead: isHead)
    }

    /// The whole answer is with the kernel: close, linger, or read the next request.
    private mutating func writeCompleted() -> Actions {
        let timer = arm(.off)
        switch afterWrite {
        case .readNext:
            phase = .reading
            return Actions(timer: timer, .parse)
        case .close:
            return close()
        case .linger:
            if peerClosed { return close() }
            phase = .lingering
            readingPaused = false
            // The answer is with the kernel: making room may cut the courtesy short.
            return Actions(timer: arm(.linger), idle: true, .linger(closeNotify: isTLS))
        }
    }

    private mutating func closeFailedHandshake() -> Actions {
        guard phase != .closed else { return .none }
        phase = .closed
        timer = .off
        return Actions(.closeFailedHandshake)
    }

    private mutating func close(closeNotify: Bool) -> Actions {
        guard phase != .closed else { return .none }
        phase = .closed
        // Closing frees the timer and takes the connection off the idle lists.
        timer = .off
        return Actions(.close(closeNotify: closeNotify))
    }

    /// The timer change to `mode`, or nil when it is off and stays off (a timer is armed only
    /// for a mode it is not already armed for).
    private mutating func arm(_ mode: Timer) -> Timer? {
        if mode == .off && timer == .off { return nil }
        timer = mode
        return mode
    }

    /// Whether the handler's answer asks to close the connection (`Connection: close`).
    static func asksToClose(_ response: borrowing HTTPResponse) -> Bool {
        guard let connection = response.headers["Connection"] else { return false }
        return connection.split(separator: ",").contains { $0.trimmingOWS().equalsIgnoringASCIICase("close") }
    }
}
