import XCTest

@testable import HTTPServer

private typealias Machine = ConnectionMachine

/// What the machine told the connection to do, recorded in order.
private enum Effect: Equatable {
    case timer(Machine.Timer)
    case idle(Bool)
    /// The request's method and path, and its sequence number.
    case dispatch(String, UInt64)
    case decideContinue(clientWaiting: Bool)
    case write(status: Int, Machine.Framing)
    case writeProblem(HTTPProtocolError, Machine.Framing)
    case discardInput
    case tlsEstablished
    case linger(closeNotify: Bool)
    case close(closeNotify: Bool)
    case closeFailedHandshake
}

/// Drives a machine the way `Connection` does, without a socket: the input buffer is a byte
/// array, writes complete at once (or stay queued, with `writesComplete` false), and every
/// action is recorded in `effects`.
private struct Harness {
    var machine: Machine
    /// Bytes read and not yet taken by the parser.
    var input: [UInt8] = []
    var effects: [Effect] = []
    var writesComplete = true
    private var parsing = false

    init(tls: Bool = false) {
        machine = Machine(isTLS: tls, limits: .init(maxHeaderBytes: 1024, maxHeaderCount: 10, maxBodyBytes: 64))
        perform(machine.start())
    }

    /// The effects recorded since the last call.
    mutating func take() -> [Effect] {
        defer { effects = [] }
        return effects
    }

    /// `text` arrives on the socket.
    mutating func receive(_ text: String) {
        switch machine.readable(buffered: input.count) {
        case .parseInPlace:
            input += Array(text.utf8)
            parseInput()
        case .buffer:
            input += Array(text.utf8)
            perform(machine.inputArrived())
        case .pause:
            XCTFail("reading paused")
        }
    }

    /// The handler answers request `sequence`; returns whether the answer was the awaited one.
    @discardableResult
    mutating func answer(_ sequence: UInt64, status: Int = 200, headers: HTTPHeaders = [:]) -> Bool {
        let response = HTTPResponse(status: status, headers: headers)
        let (settled, actions) = machine.responseReady(sequence: sequence, response, inputBuffered: !input.isEmpty)
        perform(actions, answer: response)
        return settled
    }

    /// Performs `actions`; `answer`: the response the event brought, which `.write` writes.
    mutating func perform(_ actions: Machine.Actions, answer: HTTPResponse? = nil) {
        if let timer = actions.timer { effects.append(.timer(timer)) }
        if let idle = actions.idle { effects.append(.idle(idle)) }
        switch actions.step {
        case .none:
            break
        case .dispatch(let sequence):
            let parsed = machine.takeRequest()
            effects.append(.dispatch("\(parsed.request.method) \(parsed.request.path)", sequence))
        case .decideContinue(let clientWaiting):
            effects.append(.decideContinue(clientWaiting: clientWaiting))
        case .write(let framing):
            guard let answer else { return XCTFail("a write without an answer") }
            effects.append(.write(status: answer.status, framing))
            perform(machine.written(completely: writesComplete))
        case .writeProblem(let framing):
            guard let problem = machine.problem else { return XCTFail("a problem answer without a problem") }
            effects.append(.writeProblem(problem, framing))
            perform(machine.written(completely: writesComplete))
        case .parse:
            if !parsing { parseInput() }
        case .discardInput:
            effects.append(.discardInput)
            input = []
        case .tlsEstablished:
            effects.append(.tlsEstablished)
        case .linger(let closeNotify):
            effects.append(.linger(closeNotify: closeNotify))
            input = []
        case .close(let closeNotify):
            effects.append(.close(closeNotify: closeNotify))
        case .closeFailedHandshake:
            effects.append(.closeFailedHandshake)
        }
    }

    /// As `Connection.processInput`: parse while a request is awaited, then wait for input.
    private mutating func parseInput() {
        parsing = true
        defer { parsing = false }
        while machine.phase == .reading && !input.isEmpty {
            let (consumed, actions) = input.withUnsafeBytes { machine.parse($0, moreBuffered: false) }
            input.removeFirst(consumed)
            perform(actions)
        }
        perform(machine.inputExhausted())
    }
}

private let ok = Machine.Framing(close: false, http10KeepAlive: false, isHead: false)
private let closing = Machine.Framing(close: true, http10KeepAlive: false, isHead: false)

final class ConnectionMachineTests: XCTestCase {
    // MARK: - Order

    func testPipelinedRequestsAreHandledOneAtATimeInRequestOrder() {
        var c = Harness()
        _ = c.take()
        c.receive(get("/a") + get("/b") + get("/c"))
        // Only the first reaches the handler; the others wait in the input.
        XCTAssertEqual(c.take(), [.timer(.off), .idle(false), .dispatch("GET /a", 1)])
        XCTAssertEqual(c.machine.phase, .handling)

        // An answer for a request not yet dispatched, or for none, is not written.
        XCTAssertFalse(c.answer(2, status: 202))
        XCTAssertFalse(c.answer(0, status: 202))
        XCTAssertEqual(c.take(), [])

        XCTAssertTrue(c.answer(1, status: 201))
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 201, ok), .idle(false), .dispatch("GET /b", 2)])

        // A late or repeated answer to the first request is ignored: the second's comes next.
        XCTAssertFalse(c.answer(1, status: 500))
        XCTAssertEqual(c.take(), [])
        XCTAssertTrue(c.answer(2, status: 202))
        XCTAssertTrue(c.answer(3, status: 203))
        XCTAssertEqual(
            c.take(),
            [
                .idle(false), .write(status: 202, ok), .idle(false), .dispatch("GET /c", 3),
                .idle(false), .write(status: 203, ok),
                // All answered and nothing left: idle between requests.
                .timer(.idle), .idle(true)
            ])
        XCTAssertEqual(c.machine.phase, .reading)
    }

    func testNextRequestIsReadOnlyAfterTheAnswerDrained() {
        var c = Harness()
        c.writesComplete = false
        c.receive(get("/a") + get("/b"))
        _ = c.take()
        c.answer(1)
        // The answer did not fit the socket: the write timer runs, the next request waits.
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, ok), .timer(.write)])
        XCTAssertEqual(c.machine.phase, .writing)
        c.perform(c.machine.outputDrained())
        XCTAssertEqual(c.take(), [.timer(.off), .idle(false), .dispatch("GET /b", 2)])
    }

    func testWriteTimeoutCloses() {
        var c = Harness()
        c.writesComplete = false
        c.receive(get("/a"))
        c.answer(1)
        _ = c.take()
        c.perform(c.machine.timerFired())
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
        XCTAssertEqual(c.machine.phase, .closed)
    }

    // MARK: - Keep-alive and framing

    func testHTTP11KeepsTheConnectionOpen() {
        var c = Harness()
        c.receive(get("/"))
        _ = c.take()
        c.answer(1)
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, ok), .timer(.idle), .idle(true)])
        XCTAssertEqual(c.machine.phase, .reading)
    }

    func testConnectionCloseClosesAfterTheAnswerAndReadsNoFurther() {
        var c = Harness()
        c.receive(get("/a", "Connection: close\r\n") + get("/b"))
        _ = c.take()
        c.answer(1)
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, closing), .close(closeNotify: false)])
        XCTAssertEqual(c.machine.phase, .closed)
    }

    func testHandlerAskingToCloseClosesAfterItsAnswer() {
        var c = Harness()
        c.receive(get("/a") + get("/b"))
        _ = c.take()
        c.answer(1, headers: ["Connection": "x, Close"])
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, closing), .close(closeNotify: false)])
    }

    func testHTTP10ClosesUnlessItAsksToKeepAlive() {
        var c = Harness()
        c.receive("GET / HTTP/1.0\r\n\r\n")
        _ = c.take()
        c.answer(1)
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, closing), .close(closeNotify: false)])

        var k = Harness()
        k.receive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        _ = k.take()
        k.answer(1)
        XCTAssertEqual(
            k.take(),
            [
                .idle(false), .write(status: 200, .init(close: false, http10KeepAlive: true, isHead: false)),
                .timer(.idle), .idle(true)
            ])
        // An HTTP/1.0 keep-alive request answered with a close is framed as a close.
        k.receive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        _ = k.take()
        k.answer(2, headers: ["Connection": "close"])
        XCTAssertEqual(k.take(), [.idle(false), .write(status: 200, closing), .close(closeNotify: false)])
    }

    func testHeadAnswersAreFramedWithoutBodyForTheHeadRequestOnly() {
        var c = Harness()
        c.receive("HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n" + get("/g"))
        _ = c.take()
        c.answer(1)
        c.answer(2)
        XCTAssertEqual(
            c.take(),
            [
                .idle(false), .write(status: 200, .init(close: false, http10KeepAlive: false, isHead: true)),
                .idle(false), .dispatch("GET /g", 2),
                .idle(false), .write(status: 200, ok), .timer(.idle), .idle(true)
            ])
    }

    // MARK: - Protocol errors

    func testProtocolErrorIsAnsweredThenTheConnectionLingersAndCloses() {
        var c = Harness()
        _ = c.take()
        c.receive("GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n" + get("/next"))
        guard case .writeProblem(.malformedRequest, let framing)? = c.effects.dropFirst(2).first else {
            return XCTFail("no problem answer: \(c.effects)")
        }
        XCTAssertEqual(framing, closing)
        XCTAssertEqual(
            Array(c.take().dropFirst(3)),
            [
                // Answered: the write side shuts, what the client sends is dropped, and the
                // connection may make room for a new one.
                .timer(.linger), .idle(true), .linger(closeNotify: false)
            ])
        XCTAssertEqual(c.machine.phase, .lingering)
        c.receive("more bytes")
        XCTAssertEqual(c.take(), [.discardInput])
        c.perform(c.machine.streamEvent(.endOfStream))
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
    }

    func testPeerClosingMidRequestClosesWithoutAnAnswer() {
        var c = Harness()
        c.receive("GET / HTTP/1.1\r\nHost: a\r\n")
        _ = c.take()
        c.perform(c.machine.streamEvent(.endOfStream))
        // The request can never complete.
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
    }

    func testProblemAnswerToAPeerThatHasClosedEndsWithoutLingering() {
        var p = Harness()
        p.writesComplete = false
        p.receive("BAD\n")
        p.perform(p.machine.streamEvent(.endOfStream))
        _ = p.take()
        p.perform(p.machine.outputDrained())
        XCTAssertEqual(p.take(), [.close(closeNotify: false)])
    }

    func testLingerTimeoutCloses() {
        var c = Harness()
        c.receive("BAD\n")
        XCTAssertEqual(c.machine.timer, .linger)
        _ = c.take()
        c.perform(c.machine.timerFired())
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
    }

    // MARK: - Timeouts

    func testAHeadIsTimedByTheHeaderTimeoutItsBodyByTheRequestTimeoutAndTheWaitBetweenRequestsIsIdle() {
        var c = Harness()
        XCTAssertEqual(c.take(), [.timer(.header), .idle(true)])
        // Empty lines before a request do not begin it.
        c.receive("\r\n")
        XCTAssertEqual(c.take(), [.idle(true)])
        // A partial head: the header timer keeps running from the opening (not re-armed).
        c.receive("GET / HT")
        XCTAssertEqual(c.take(), [.idle(true)])
        c.receive("TP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(c.take(), [.timer(.off), .idle(false), .dispatch("GET /", 1)])
        c.answer(1)
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, ok), .timer(.idle), .idle(true)])
        // The next request's first byte starts its own header timer; the head's end, the
        // request timer for the body.
        c.receive("P")
        XCTAssertEqual(c.take(), [.timer(.header), .idle(true)])
        c.receive("OST / HTTP/1.1\r\nHost: a\r\n")
        XCTAssertEqual(c.take(), [.idle(true)])
        c.receive("Content-Length: 2\r\n\r\n")
        XCTAssertEqual(c.take(), [.timer(.request), .idle(true)])
        c.receive("o")
        XCTAssertEqual(c.take(), [.idle(true)])
        c.receive("k")
        XCTAssertEqual(c.take(), [.timer(.off), .idle(false), .dispatch("POST /", 2)])
    }

    func testAConnectionReceivingARequestMayBeClosedToMakeRoomUntilTheHandlerHasIt() {
        // Listed idle (closable to make room) while its head or its body arrives, like one that
        // sends nothing: a slow client holds its place no more firmly than a silent one.
        for partial in ["GET / HTTP/1.1\r\nHost:", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab"] {
            var c = Harness()
            c.receive(partial)
            XCTAssertEqual(c.take().last, .idle(true), partial)
            XCTAssertTrue(c.machine.requestStarted, partial)
            // Closing it to make room closes it without an answer.
            c.perform(c.machine.close())
            XCTAssertEqual(c.take(), [.close(closeNotify: false)], partial)
        }
        // Once the handler has the request, and while its answer is written, it is not listed.
        var c = Harness()
        c.writesComplete = false
        c.receive(get("/"))
        XCTAssertEqual(c.take(), [.timer(.header), .idle(true), .timer(.off), .idle(false), .dispatch("GET /", 1)])
        c.answer(1)
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, ok), .timer(.write)])
        c.perform(c.machine.outputDrained())
        XCTAssertEqual(c.take(), [.timer(.off), .timer(.idle), .idle(true)])
    }

    func testHeaderAndRequestTimeoutsAnswer408OnlyOnceARequestBegan() {
        var silent = Harness()
        _ = silent.take()
        XCTAssertEqual(silent.machine.timer, .header)
        silent.perform(silent.machine.timerFired())
        XCTAssertEqual(silent.take(), [.close(closeNotify: false)])

        // A slow head (the header timeout), a slow body (the request timeout).
        for (partial, timer) in [
            ("GET / HTTP/1.1\r\nHost: a\r\nX-Slow: a", Machine.Timer.header),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab", .request)
        ] {
            var slow = Harness()
            slow.receive(partial)
            _ = slow.take()
            XCTAssertEqual(slow.machine.timer, timer, partial)
            slow.perform(slow.machine.timerFired())
            XCTAssertEqual(
                slow.take(),
                [
                    .idle(false), .writeProblem(.requestTimeout, closing), .timer(.linger), .idle(true),
                    .linger(closeNotify: false)
                ], partial)
        }
    }

    func testIdleTimeoutCloses() {
        var c = Harness()
        c.receive(get("/"))
        c.answer(1)
        XCTAssertEqual(c.machine.timer, .idle)
        _ = c.take()
        c.perform(c.machine.timerFired())
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
    }

    func testNoTimerRunsWhileTheHandlerHasTheRequest() {
        var c = Harness()
        c.receive(get("/"))
        XCTAssertEqual(c.machine.timer, .off)
        // A timer event that was already due does nothing.
        c.perform(c.machine.timerFired())
        XCTAssertEqual(c.machine.phase, .handling)
    }

    // MARK: - Peer half-close

    func testHalfClosedPeerStillGetsEveryPendingAnswerThenTheConnectionCloses() {
        var c = Harness()
        c.receive(get("/a") + get("/b"))
        c.perform(c.machine.streamEvent(.endOfStream))
        _ = c.take()
        XCTAssertEqual(c.machine.phase, .handling)
        c.answer(1)
        // The second request is still buffered: the first answer keeps the connection.
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, ok), .idle(false), .dispatch("GET /b", 2)])
        c.answer(2)
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, closing), .close(closeNotify: false)])
    }

    func testEndOfStreamWhileIdleCloses() {
        var c = Harness()
        c.receive(get("/"))
        c.answer(1)
        _ = c.take()
        c.perform(c.machine.streamEvent(.endOfStream))
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
    }

    func testStreamErrorClosesAtOnce() {
        var c = Harness()
        c.receive(get("/"))
        _ = c.take()
        c.perform(c.machine.streamEvent(.failed))
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
        // The answer that comes later settles the request and writes nothing.
        XCTAssertTrue(c.answer(1))
        XCTAssertEqual(c.take(), [])
    }

    // MARK: - Reading pressure

    func testReadingPausesAtTheHighWaterMarkAndResumesBelowIt() {
        let mark = Machine.readHighWatermark
        var c = Harness()
        c.receive(get("/"))
        XCTAssertEqual(c.machine.readable(buffered: mark - 1), .buffer)
        XCTAssertFalse(c.machine.readingPaused)
        XCTAssertEqual(c.machine.readable(buffered: mark), .pause)
        XCTAssertTrue(c.machine.readingPaused)
        // Still at the mark: stays paused.
        XCTAssertFalse(c.machine.inputTaken(buffered: mark))
        XCTAssertTrue(c.machine.inputTaken(buffered: mark - 1))
        XCTAssertFalse(c.machine.readingPaused)
        XCTAssertFalse(c.machine.inputTaken(buffered: 0), "resumed once only")
    }

    func testReadsInPlaceOnlyWhenWaitingWithNothingBuffered() {
        var c = Harness()
        XCTAssertEqual(c.machine.readable(buffered: 0), .parseInPlace)
        XCTAssertEqual(c.machine.readable(buffered: 1), .buffer)
        c.receive(get("/"))
        XCTAssertEqual(c.machine.readable(buffered: 0), .buffer)
    }

    func testLingeringNeverPausesAndResumesReading() {
        let mark = Machine.readHighWatermark
        var l = Harness()
        l.writesComplete = false
        l.receive("BAD\n")
        XCTAssertEqual(l.machine.readable(buffered: mark), .pause)
        l.perform(l.machine.outputDrained())
        XCTAssertEqual(l.machine.phase, .lingering)
        XCTAssertFalse(l.machine.readingPaused, "lingering reads whatever comes")
        XCTAssertEqual(l.machine.readable(buffered: mark * 2), .buffer)
    }

    // MARK: - Expect: 100-continue

    func testContinueIsOfferedOnlyWhileTheClientWaits() {
        let head = "PUT /u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
        var c = Harness()
        c.receive(head)
        XCTAssertEqual(
            c.take(), [.timer(.header), .idle(true), .decideContinue(clientWaiting: true), .timer(.request), .idle(true)])
        XCTAssertEqual(c.machine.headAwaitingBody?.declaredBodyLength, 2)
        c.receive("ok")
        XCTAssertEqual(c.take(), [.timer(.off), .idle(false), .dispatch("PUT /u", 1)])

        var eager = Harness()
        _ = eager.take()
        eager.receive(head + "ok")
        XCTAssertEqual(eager.take().prefix(1), [.decideContinue(clientWaiting: false)])
    }

    func testAnswerBeforeTheBodyClosesAfterIt() {
        var c = Harness()
        c.receive("HEAD /u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        _ = c.take()
        c.perform(c.machine.answeredBeforeBody(), answer: HTTPResponse(status: 417))
        XCTAssertEqual(
            c.take(),
            [
                .timer(.off), .idle(false), .write(status: 417, .init(close: true, http10KeepAlive: false, isHead: true)),
                .timer(.linger), .idle(true), .linger(closeNotify: false)
            ])
    }

    // MARK: - Shutdown

    func testDrainClosesIdleConnectionsAndBusyOnesAfterTheirAnswer() {
        var idle = Harness()
        _ = idle.take()
        idle.perform(idle.machine.drain())
        XCTAssertEqual(idle.take(), [.close(closeNotify: false)])

        var busy = Harness()
        busy.receive(get("/a") + get("/b"))
        _ = busy.take()
        busy.perform(busy.machine.drain())
        XCTAssertEqual(busy.take(), [])
        busy.answer(1)
        XCTAssertEqual(busy.take(), [.idle(false), .write(status: 200, closing), .close(closeNotify: false)])

        var writing = Harness()
        writing.writesComplete = false
        writing.receive(get("/a"))
        writing.answer(1)
        writing.perform(writing.machine.drain())
        _ = writing.take()
        writing.perform(writing.machine.outputDrained())
        XCTAssertEqual(writing.take(), [.close(closeNotify: false)])

        var midRequest = Harness()
        midRequest.receive("GET / HTTP/1.1\r\n")
        midRequest.perform(midRequest.machine.drain())
        XCTAssertEqual(midRequest.machine.phase, .reading, "a begun request is finished first")
        _ = midRequest.take()
        midRequest.receive("Host: a\r\n\r\n")
        midRequest.answer(1)
        XCTAssertEqual(midRequest.take().suffix(2), [.write(status: 200, closing), .close(closeNotify: false)])
    }

    func testForceCloseSettlesTheAwaitedRequestOnce() {
        var c = Harness()
        c.receive(get("/"))
        _ = c.take()
        let (settled, actions) = c.machine.forceClose()
        XCTAssertTrue(settled)
        c.perform(actions)
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
        XCTAssertFalse(c.answer(1), "already settled")
        XCTAssertFalse(c.machine.forceClose().settled)
        XCTAssertEqual(c.take(), [])
    }

    func testClosingTwiceClosesOnce() {
        var c = Harness()
        _ = c.take()
        c.perform(c.machine.close())
        c.perform(c.machine.close())
        c.perform(c.machine.streamEvent(.endOfStream))
        c.perform(c.machine.timerFired())
        c.perform(c.machine.drain())
        XCTAssertEqual(c.take(), [.close(closeNotify: false)])
    }

    // MARK: - TLS

    func testHandshakeIsTimedThenTheFirstRequestByTheHeaderTimeout() {
        var c = Harness(tls: true)
        XCTAssertEqual(c.take(), [.timer(.handshake), .idle(true)])
        XCTAssertEqual(c.machine.phase, .handshaking)
        XCTAssertEqual(c.machine.inputArrived(), .none, "no input is read mid-handshake")
        c.perform(c.machine.streamEvent(.connected))
        XCTAssertEqual(c.take(), [.timer(.header), .tlsEstablished])
        c.receive(get("/"))
        XCTAssertEqual(c.take(), [.timer(.off), .idle(false), .dispatch("GET /", 1)])
        c.answer(1, headers: ["Connection": "close"])
        // A clean exchange ends with close_notify.
        XCTAssertEqual(c.take(), [.idle(false), .write(status: 200, closing), .close(closeNotify: true)])
    }

    func testFailedOrSlowHandshakeIsCountedAndClosedWithoutCloseNotify() {
        var refused = Harness(tls: true)
        _ = refused.take()
        refused.perform(refused.machine.streamEvent(.endOfStream))
        XCTAssertEqual(refused.take(), [.closeFailedHandshake])

        var slow = Harness(tls: true)
        _ = slow.take()
        slow.perform(slow.machine.timerFired())
        XCTAssertEqual(slow.take(), [.closeFailedHandshake])

        var drained = Harness(tls: true)
        _ = drained.take()
        drained.perform(drained.machine.drain())
        XCTAssertEqual(drained.take(), [.close(closeNotify: false)], "not mid-handshake")
    }

    func testTLSCloseNotifyIsSentOnceAndNeverAfterAnError() {
        var lingering = Harness(tls: true)
        lingering.perform(lingering.machine.streamEvent(.connected))
        lingering.receive("BAD\n")
        XCTAssertEqual(lingering.take().suffix(3), [.timer(.linger), .idle(true), .linger(closeNotify: true)])
        lingering.perform(lingering.machine.timerFired())
        XCTAssertEqual(lingering.take(), [.close(closeNotify: false)], "sent when lingering began")

        var failed = Harness(tls: true)
        failed.perform(failed.machine.streamEvent(.connected))
        _ = failed.take()
        failed.perform(failed.machine.streamEvent(.failed))
        XCTAssertEqual(failed.take(), [.close(closeNotify: false)])

        var evicted = Harness(tls: true)
        evicted.perform(evicted.machine.streamEvent(.connected))
        _ = evicted.take()
        evicted.perform(evicted.machine.close())
        XCTAssertEqual(evicted.take(), [.close(closeNotify: true)])
    }
}
