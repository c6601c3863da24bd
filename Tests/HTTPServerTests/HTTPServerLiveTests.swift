import Dispatch
import Glibc
import HTTPServer
import Synchronization
import XCTest

/// A real server on port 0, driven over plain sockets.
final class HTTPServerLiveTests: XCTestCase {
    // MARK: - Keep-alive and pipelining

    func testKeepAliveServesSeveralRequestsOnOneConnection() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            for index in 0..<5 {
                try client.send(post("/echo", "body \(index)"))
                let response = try client.readResponse()
                XCTAssertEqual(response.status, 200)
                XCTAssertEqual(response.text, "body \(index)")
                XCTAssertNil(response.header("Connection"))
                XCTAssertNotNil(response.header("Date"))
                XCTAssertEqual(response.header("X-Method"), "POST")
            }
            XCTAssertEqual(server.openConnections, 1)
            XCTAssertEqual(server.inFlightRequests, 0)
        }
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            // The first is answered last by the handler, yet must come back first.
            try client.send(
                get("/async?ms=150&id=1") + get("/async?ms=5&id=2") + post("/echo?id=3", "three")
                    + get("/echo?id=4"))
            let ids = try (0..<4).map { _ in try client.readResponse().header("X-Query") }
            XCTAssertEqual(ids, ["ms=150&id=1", "ms=5&id=2", "id=3", "id=4"])
        }
    }

    func testPipelinedRequestsBeforeAHalfCloseAreAllAnswered() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/async?ms=50&id=1") + get("/echo?id=2") + get("/echo?id=3"))
            Glibc.shutdown(client.socket, Int32(SHUT_WR))
            let ids = try (0..<3).map { _ in try client.readResponse().header("X-Query") }
            XCTAssertEqual(ids, ["ms=50&id=1", "id=2", "id=3"])
            XCTAssertTrue(try client.readsEndOfStream())
            XCTAssertTrue(eventually { server.openConnections == 0 })
        }
    }

    /// Behind a slow request, pipelined requests pile up past the input's high-water mark
    /// (64 KiB): reading pauses there and must resume once the parser has taken them. Each
    /// request is exactly one read (16 KiB reads here), so the paused input ends on a request
    /// boundary and nothing but the resumed read event brings in the rest.
    func testPipelinedRequestsBeyondTheHighWaterMarkAreAllAnsweredInOrder() throws {
        var configuration = HTTPServerConfiguration.testing()
        configuration.readBufferBytes = 16_384
        try withServer(configuration) { server in
            let client = try TestClient(port: server.boundPort)
            func request(_ path: String, _ index: Int) -> String {
                let head = post(path, "").utf8.count + 4  // Content-Length grows from 1 digit to 5
                return post(path, String(repeating: "p", count: 16_384 - head - 1) + "\(index % 10)")
            }
            var requests = request("/async?ms=300&id=first", 0)
            for index in 0..<12 { requests += request("/echo?id=\(index)", index) }
            XCTAssertEqual(requests.utf8.count, 13 * 16_384)
            try client.send(requests)
            XCTAssertEqual(try client.readResponse().header("X-Query"), "ms=300&id=first")
            for index in 0..<12 {
                let response = try client.readResponse()
                XCTAssertEqual(response.header("X-Query"), "id=\(index)")
                XCTAssertEqual(response.text.count, 16_384 - (post("/echo?id=\(index)", "").utf8.count + 4))
            }
            XCTAssertEqual(server.inFlightRequests, 0)
        }
    }

    func testHeadResponseHasLengthButNoBody() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send("HEAD /big?bytes=10 HTTP/1.1\r\nHost: t\r\n\r\n" + get("/big?bytes=3"))
            let head = try client.readResponse(head: true)
            XCTAssertEqual(head.status, 200)
            XCTAssertEqual(head.header("Content-Length"), "10")
            let next = try client.readResponse()
            XCTAssertEqual(next.text, "bbb", "a HEAD body would have shifted this response")
        }
    }

    func testHTTP10ClosesUnlessKeepAliveIsAsked() throws {
        try withServer { server in
            let closing = try TestClient(port: server.boundPort)
            try closing.send("GET /echo HTTP/1.0\r\n\r\n")
            XCTAssertEqual(try closing.readResponse().header("Connection"), "close")
            XCTAssertTrue(try closing.readsEndOfStream())

            let keeping = try TestClient(port: server.boundPort)
            try keeping.send("GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            XCTAssertEqual(try keeping.readResponse().header("Connection"), "keep-alive")
            try keeping.send("GET /echo?again HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            XCTAssertEqual(try keeping.readResponse().header("X-Query"), "again")
        }
    }

    func testConnectionCloseFromClientOrHandlerIsHonoured() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/echo", "Connection: close\r\n"))
            XCTAssertEqual(try client.readResponse().header("Connection"), "close")
            XCTAssertTrue(try client.readsEndOfStream())

            let other = try TestClient(port: server.boundPort)
            try other.send(get("/close"))
            XCTAssertEqual(try other.readResponse().header("Connection"), "close")
            XCTAssertTrue(try other.readsEndOfStream())
        }
    }

    /// Bodies larger than libevent's 4 KiB reads are read on in one pass (`readRestOfRequest`):
    /// they must arrive whole, and a pipelined request behind one must stay for its turn.
    func testLargeBodiesArriveWholeAndPipelinedRequestsBehindThemToo() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            for size in [4_095, 4_096, 4_097, 7_700, 65_536, 300_000] {
                let body = String((0..<size).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
                try client.send(post("/echo?size=\(size)", body) + get("/echo?after=\(size)"))
                let response = try client.readResponse()
                XCTAssertEqual(response.status, 200)
                XCTAssertEqual(response.text, body, "a \(size)-byte body changed on the way")
                XCTAssertEqual(try client.readResponse().header("X-Query"), "after=\(size)")
            }
            // Sent in two parts with a pause: the second part is read when it comes.
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10000\r\n\r\n" + String(repeating: "x", count: 6_000))
            Thread.sleep(forTimeInterval: 0.05)
            try client.send(String(repeating: "y", count: 4_000))
            XCTAssertEqual(try client.readResponse().text, String(repeating: "x", count: 6_000) + String(repeating: "y", count: 4_000))
        }
    }

    func testChunkedRequestBody() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nwiki\r\n")
            try client.send("5\r\npedia\r\n0\r\nTrailer: ignored\r\n\r\n")
            XCTAssertEqual(try client.readResponse().text, "wikipedia")
        }
    }

    func testRemoteAddressIsIPAndPort() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/remote"))
            let text = try client.readResponse().text
            XCTAssertTrue(text.hasPrefix("127.0.0.1:"), text)
            XCTAssertNotNil(Int(text.dropFirst("127.0.0.1:".count)))
        }
    }

    /// Connections are spread over the loops whichever loop wins each `accept`: a loop with two
    /// more than another hands the new one over, so long-lived connections never pile up on one.
    func testConnectionsAreSpreadOverTheLoops() throws {
        for threads in [2, 3] {
            try withServer(.testing { $0.threads = threads }) { server in
                var clients: [TestClient] = []
                var served: [String: Int] = [:]
                for _ in 0..<12 {
                    let client = try TestClient(port: server.boundPort)
                    try client.send(get("/thread"))
                    served[try client.readResponse().text, default: 0] += 1
                    clients.append(client)  // kept open, as keep-alive clients are
                }
                XCTAssertEqual(served.count, threads, "every loop serves some: \(served)")
                XCTAssertLessThanOrEqual(served.values.max()! - served.values.min()!, 2, "\(served)")
                // Closed connections leave their loop's count: new ones go where the room is.
                for client in clients { client.close() }
                XCTAssertTrue(eventually(2) { server.openConnections == 0 })
                served = [:]
                for _ in 0..<6 {
                    let client = try TestClient(port: server.boundPort)
                    try client.send(get("/thread"))
                    served[try client.readResponse().text, default: 0] += 1
                    clients.append(client)
                }
                XCTAssertLessThanOrEqual(served.values.max()! - (served.count == threads ? served.values.min()! : 0), 2, "\(served)")
            }
        }
    }

    // MARK: - Protocol errors

    private func expectError(
        _ request: String, status: Int,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in },
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        try withServer(.testing(configure)) { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(request)
            let response = try client.readResponse()
            XCTAssertEqual(response.status, status, file: file, line: line)
            XCTAssertEqual(response.header("Content-Type"), "application/problem+json", file: file, line: line)
            XCTAssertEqual(response.text, "{\"status\":\(status)}", file: file, line: line)
            XCTAssertEqual(response.header("Connection"), "close", file: file, line: line)
            XCTAssertTrue(try client.readsEndOfStream(), "connection left open", file: file, line: line)
            // The server lingers after an error until the client closes too.
            XCTAssertEqual(server.openConnections, 1, file: file, line: line)
            client.close()
            XCTAssertTrue(eventually(1) { server.openConnections == 0 }, file: file, line: line)
        }
    }

    func testBodyTooLargeIsAnsweredBeforeTheBodyIsSent() throws {
        try expectError("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n", status: 413) {
            $0.maxBodyBytes = 1024
        }
    }

    func testClientSendingTheOversizedBodyAnywayStillReadsTheWhole413() throws {
        // Closing a socket with unread input makes the kernel reset the connection and drop
        // what it has not yet sent. A large answer to a slow reader is still in the kernel when
        // the server is done writing, so only a lingering close (shut the write side, drain the
        // input, then close) gets all of it to the client.
        let padding = 8 << 20
        try withServer(.testing { $0.maxBodyBytes = 1024 }, handler: TestHandler(errorPadding: padding)) { server in
            let client = try TestClient(port: server.boundPort, receiveBuffer: 16 << 10)
            let body = [UInt8](repeating: UInt8(ascii: "x"), count: 4 << 20)
            let socket = client.socket
            let sender = DispatchGroup()
            DispatchQueue.global().async(group: sender) {
                let head = Array("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
                for part in [head, body] {
                    var sent = 0
                    while sent < part.count {
                        let result = part.withUnsafeBytes {
                            Glibc.send(socket, $0.baseAddress! + sent, part.count - sent, Int32(MSG_NOSIGNAL))
                        }
                        if result <= 0 { return }
                        sent += result
                    }
                }
            }
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 413)
            XCTAssertEqual(response.body.count, "{\"status\":413}".utf8.count + padding)
            XCTAssertTrue(try client.readsEndOfStream())
            sender.wait()
        }
    }

    func testHeaderSectionTooLarge() throws {
        try expectError(get("/echo", "X-Big: \(String(repeating: "x", count: 2000))\r\n"), status: 431) {
            $0.maxHeaderBytes = 1024
        }
        try expectError(get("/echo", (0..<20).map { "X-\($0): v\r\n" }.joined()), status: 431) {
            $0.maxHeaderCount = 10
        }
    }

    func testMalformedRequest() throws {
        try expectError("GARBAGE\r\n\r\n", status: 400)
        try expectError("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", status: 400)
    }

    func testUnsupportedTransferEncoding() throws {
        try expectError("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501)
    }

    func testUnsupportedVersion() throws {
        try expectError("GET /echo HTTP/2.0\r\nHost: t\r\n\r\n", status: 505)
    }

    func testErrorAfterAGoodRequestOnTheSameConnection() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/echo?ok") + "BAD REQUEST LINE\r\n\r\n")
            XCTAssertEqual(try client.readResponse().status, 200)
            XCTAssertEqual(try client.readResponse().status, 400)
            XCTAssertTrue(try client.readsEndOfStream())
        }
    }

    // MARK: - 100-continue

    func testExpectContinueIsAnsweredBeforeTheBody() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send("PUT /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let interim = try client.readResponse()
            XCTAssertEqual(interim.status, 100)
            try client.send("hello")
            let final = try client.readResponse()
            XCTAssertEqual(final.status, 200)
            XCTAssertEqual(final.text, "hello")
        }
    }

    func testExpectContinueRefusedByTheHandlerGetsOnlyTheFinalAnswer() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send("PUT /refuse HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 403, "not the final answer first")
            XCTAssertEqual(response.text, "refused before the body")
            XCTAssertEqual(response.header("X-Declared"), "5")
            XCTAssertEqual(response.header("Connection"), "close")
            // A body sent anyway is discarded, never taken for a request.
            try? client.send("GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
            XCTAssertTrue(try client.readsEndOfStream())
            XCTAssertEqual(server.inFlightRequests, 0)
        }
    }

    func testExpectContinueRefusalHoldsForAChunkedBodyAndAClientThatDidNotWait() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(
                "POST /refuse HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5\r\nhello\r\n0\r\n\r\n")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 403)
            XCTAssertEqual(response.header("X-Declared"), "chunked")
            XCTAssertTrue(try client.readsEndOfStream())
            // Without the expectation the same request reaches the handler.
            let plain = try TestClient(port: server.boundPort)
            try plain.send(post("/refuse", "hello"))
            XCTAssertEqual(try plain.readResponse().text, "hello")
        }
    }

    func testExpectContinueWithTooLargeBodyGets413Only() throws {
        try withServer(.testing { $0.maxBodyBytes = 100 }) { server in
            let client = try TestClient(port: server.boundPort)
            try client.send("PUT /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 101\r\n\r\n")
            XCTAssertEqual(try client.readResponse().status, 413)
            XCTAssertTrue(try client.readsEndOfStream())
        }
    }

    // MARK: - Asynchronous answers

    func testAsyncResponseFromAnotherThreadArrives() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(post("/async?ms=50", "later"))
            XCTAssertTrue(eventually { server.inFlightRequests == 1 })
            let response = try client.readResponse()
            XCTAssertEqual(response.text, "later")
            XCTAssertEqual(server.inFlightRequests, 0)
        }
    }

    func testSecondAnswerIsIgnored() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/twice") + get("/echo?after"))
            XCTAssertEqual(try client.readResponse().text, "first")
            XCTAssertEqual(try client.readResponse().header("X-Query"), "after")
            XCTAssertEqual(server.inFlightRequests, 0)
        }
    }

    func testClientLeavingBeforeAsyncAnswerIsHarmless() throws {
        try withServer { server in
            do {
                let client = try TestClient(port: server.boundPort)
                try client.send(get("/async?ms=200"))
                XCTAssertTrue(eventually { server.inFlightRequests == 1 })
            }  // the client closes here, before the answer
            XCTAssertTrue(eventually { server.inFlightRequests == 0 && server.openConnections == 0 })
            let next = try TestClient(port: server.boundPort)
            try next.send(get("/echo?alive"))
            XCTAssertEqual(try next.readResponse().header("X-Query"), "alive")
        }
    }

    // MARK: - Timeouts and limits

    func testSlowLorisGets408AfterTheHeaderTimeout() throws {
        // The request timeout is long: a head is timed by the header timeout.
        try withServer(
            .testing {
                $0.headerTimeout = 1; $0.requestTimeout = 60
            }
        ) { server in
            let client = try TestClient(port: server.boundPort, timeout: 60)
            let start = DispatchTime.now()
            try client.send("GET /echo HTTP/1.1\r\n")
            let stop = Atomic<Bool>(false)
            let trickle = DispatchGroup()
            let socket = client.socket
            DispatchQueue.global().async(group: trickle) {
                // One header byte every 100 ms: never complete, never idle.
                for byte in Array("X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8) {
                    if stop.load(ordering: .relaxed) { return }
                    var value = byte
                    if Glibc.send(socket, &value, 1, Int32(MSG_NOSIGNAL)) != 1 { return }
                    usleep(100_000)
                }
            }
            let response = try client.readResponse()
            let elapsed = seconds(since: start)
            stop.store(true, ordering: .relaxed)
            trickle.wait()
            XCTAssertEqual(response.status, 408)
            XCTAssertGreaterThan(elapsed, 0.9)
            XCTAssertLessThan(elapsed, 30, "timed by the request timeout (60 s), not the header timeout")
            XCTAssertTrue(try client.readsEndOfStream())
        }
    }

    func testASlowBodyGets408AfterTheRequestTimeoutFromTheEndOfItsHead() throws {
        try withServer(
            .testing {
                $0.headerTimeout = 1; $0.requestTimeout = 4
            }
        ) { server in
            let client = try TestClient(port: server.boundPort, timeout: 60)
            // The head whole, then a body that stops: timed by the request timeout (4 s) from the
            // head's end, not by the header timeout (1 s). A slow machine only lengthens it.
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
            let headEnd = DispatchTime.now()
            let response = try client.readResponse()
            let elapsed = seconds(since: headEnd)
            XCTAssertEqual(response.status, 408)
            XCTAssertGreaterThan(elapsed, 1.9, "the body was timed by the header timeout")
            XCTAssertLessThan(elapsed, 30)
        }
    }

    func testIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout() throws {
        try withServer(.testing { $0.idleTimeout = 1 }) { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/echo"))
            XCTAssertEqual(try client.readResponse().status, 200)
            let start = DispatchTime.now()
            XCTAssertTrue(try client.readsEndOfStream())
            let elapsed = seconds(since: start)
            XCTAssertGreaterThan(elapsed, 0.9)
            XCTAssertLessThan(elapsed, 2.5)
            XCTAssertTrue(eventually { server.openConnections == 0 })
        }
    }

    func testClientThatNeverReadsIsDroppedAfterTheWriteTimeout() throws {
        try withServer(.testing { $0.writeTimeout = 1 }) { server in
            let client = try TestClient(port: server.boundPort, receiveBuffer: 4096)
            // Measured from the send: the write timeout cannot fire earlier than a second after it.
            let start = DispatchTime.now()
            try client.send(get("/big?bytes=\(32 << 20)"))
            XCTAssertTrue(eventually { server.openConnections == 1 && server.inFlightRequests == 0 })
            XCTAssertTrue(eventually(4) { server.openConnections == 0 }, "the stalled connection was kept")
            XCTAssertGreaterThan(seconds(since: start), 0.95)
        }
    }

    func testASilentFirstConnectionIsClosedAfterTheHeaderTimeout() throws {
        // The idle timeout is long: the wait for a connection's first request is not idle time.
        try withServer(
            .testing {
                $0.headerTimeout = 1; $0.idleTimeout = 60
            }
        ) { server in
            let start = DispatchTime.now()
            let client = try TestClient(port: server.boundPort)
            XCTAssertTrue(try client.readsEndOfStream(), "the silent connection got an answer")
            let elapsed = seconds(since: start)
            XCTAssertGreaterThan(elapsed, 0.9)
            XCTAssertLessThan(elapsed, 3)
            XCTAssertTrue(eventually { server.openConnections == 0 })
        }
    }

    func testAFirstRequestHeadMustArriveWithinTheHeaderTimeoutOfTheConnection() throws {
        try withServer(
            .testing {
                $0.headerTimeout = 2; $0.requestTimeout = 60; $0.idleTimeout = 60
            }
        ) { server in
            let client = try TestClient(port: server.boundPort)
            let start = DispatchTime.now()
            usleep(1_200_000)
            // Begun 1.2 s after the opening and never finished: 408 at 2 s from the opening.
            try client.send("GET /echo HTTP/1.1\r\n")
            XCTAssertEqual(try client.readResponse().status, 408)
            XCTAssertLessThan(seconds(since: start), 3.0, "the deadline ran from the first byte, not the opening")
        }
    }

    func testIdleSocketsBeyondTheLimitDoNotLockOutARealClient() throws {
        let limit = 64
        try withServer(.testing { $0.maxConnections = limit }) { server in
            // Sockets that connect and never send a byte, half again as many as the limit.
            let silent = try (0..<(limit * 3 / 2)).map { _ in try TestClient(port: server.boundPort) }
            let start = DispatchTime.now()
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/echo?real"))
            let response = try client.readResponse()
            let elapsed = seconds(since: start)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.header("X-Query"), "real")
            XCTAssertLessThan(elapsed, 1.0)
            // Silent sockets made room (a loop may still be closing the last of them).
            let evicted = silent.count + 1 - limit
            XCTAssertTrue(eventually { server.evictedConnections == evicted && silent.count(where: { !$0.isOpen }) == evicted })
            XCTAssertEqual(server.openConnections, limit)
            XCTAssertEqual(server.rejectedConnections, 0)
            XCTAssertTrue(client.isOpen)
        }
    }

    func testAtTheLimitTheLongestIdleConnectionMakesRoom() throws {
        // Addresses not counted: the server's longest idle connection makes room (with a cap,
        // one of the address holding the most, below).
        try withServer(
            .testing {
                $0.maxConnections = 2; $0.maxConnectionsPerAddress = 0
            }
        ) { server in
            let first = try TestClient(port: server.boundPort)
            let second = try TestClient(port: server.boundPort)
            for client in [first, second] {
                try client.send(get("/echo"))
                XCTAssertEqual(try client.readResponse().status, 200)
                usleep(20_000)  // idle since clearly different times
            }
            let third = try TestClient(port: server.boundPort)
            try third.send(get("/echo?third"))
            XCTAssertEqual(try third.readResponse().header("X-Query"), "third")
            XCTAssertTrue(try first.readsEndOfStream(), "the longest idle connection was kept")
            try second.send(get("/echo?second"))
            XCTAssertEqual(try second.readResponse().header("X-Query"), "second")
            XCTAssertEqual(server.evictedConnections, 1)
            XCTAssertEqual(server.openConnections, 2)
        }
    }

    func testAtTheLimitTheAddressHoldingTheMostMakesRoom() throws {
        try withServer(
            .testing {
                $0.maxConnections = 4; $0.maxConnectionsPerAddress = 3
            }
        ) { server in
            // The longest idle connection is another address's; 127.0.0.1 holds the most.
            let other = try TestClient(port: server.boundPort, localAddress: "127.0.0.2")
            XCTAssertTrue(eventually { server.openConnections == 1 })
            let many = try (0..<3).map { _ in try TestClient(port: server.boundPort) }
            try many[0].send("GET /echo?slow HTTP/1.1\r\n")  // an unfinished head makes room too
            XCTAssertTrue(eventually { server.openConnections == 4 })

            let newcomer = try TestClient(port: server.boundPort, localAddress: "127.0.0.3")
            try newcomer.send(get("/echo?newcomer"))
            XCTAssertEqual(try newcomer.readResponse().header("X-Query"), "newcomer")
            XCTAssertTrue(eventually { many.count(where: { !$0.isOpen }) == 1 })
            XCTAssertTrue(other.isOpen, "the other address's only connection made room")
            XCTAssertEqual(server.evictedConnections, 1)
            XCTAssertEqual(server.rejectedConnections, 0)
        }
    }

    func testConnectionsWhoseRequestIsHandledOrAnsweredAreNeverEvicted() throws {
        // Addresses not counted: the longest idle connection makes room first.
        try withServer(
            .testing {
                $0.maxConnections = 4; $0.maxConnectionsPerAddress = 0
            }
        ) { server in
            // Each held request is answered when the test releases it, so the connections are in
            // progress for as long as the checks take, on a machine however slow; reads wait 60 s.
            let run = UUID().uuidString
            func held(_ name: String) -> String { "/held?\(run)-\(name)" }
            defer { for name in ["handled", "newcomer", "second"] { HeldRequests.release("\(run)-\(name)") } }
            // Idle between requests (first: the server lists it idle just after its answer).
            let idle = try TestClient(port: server.boundPort, timeout: 60)
            try idle.send(get("/echo"))
            XCTAssertEqual(try idle.readResponse().status, 200)
            // Handled: its answer comes from another thread later.
            let handled = try TestClient(port: server.boundPort, timeout: 60)
            try handled.send(get(held("handled")))
            // Reading: the head has begun and is not complete.
            let reading = try TestClient(port: server.boundPort, timeout: 60)
            try reading.send("GET /echo?reading HTTP/1.1\r\n")
            // Writing: an answer larger than the socket buffers, which the client does not read yet.
            let writing = try TestClient(port: server.boundPort, timeout: 60, receiveBuffer: 4096)
            try writing.send(get("/big?bytes=\(8 << 20)"))
            XCTAssertTrue(eventually { server.openConnections == 4 && server.inFlightRequests == 1 })

            // At the limit, the new connection takes the idle one's place, the next one the place
            // of the one still sending its head, then another finds every connection busy (the
            // newcomers too, with their requests in flight) and is refused.
            let newcomer = try TestClient(port: server.boundPort, timeout: 60)
            try newcomer.send(get(held("newcomer")))
            XCTAssertTrue(try idle.readsEndOfStream(), "the idle connection was kept")
            XCTAssertTrue(eventually { server.inFlightRequests == 2 })
            let second = try TestClient(port: server.boundPort, timeout: 60)
            try second.send(get(held("second")))
            XCTAssertTrue(try reading.readsEndOfStream(), "the connection sending its head was kept")
            XCTAssertTrue(eventually { server.inFlightRequests == 3 })
            let refused = try TestClient(port: server.boundPort, timeout: 60)
            try? refused.send(get("/echo"))
            XCTAssertTrue(try refused.readsEndOfStream(), "a connection over the limit was served")
            XCTAssertEqual(server.evictedConnections, 2)
            XCTAssertEqual(server.evictedIncompleteConnections, 1)
            XCTAssertEqual(server.rejectedConnections, 1)

            // Every connection whose request was handled or answered is answered in full.
            for name in ["handled", "newcomer", "second"] { HeldRequests.release("\(run)-\(name)") }
            XCTAssertEqual(try handled.readResponse().header("X-Query"), "\(run)-handled")
            XCTAssertEqual(try writing.readResponse().body.count, 8 << 20)
            XCTAssertEqual(try newcomer.readResponse().header("X-Query"), "\(run)-newcomer")
            XCTAssertEqual(try second.readResponse().header("X-Query"), "\(run)-second")
        }
    }

    func testAtItsCapAnAddressMakesRoomAmongItsOwnIdleConnections() throws {
        try withServer(.testing { $0.maxConnectionsPerAddress = 3 }) { server in
            let clients = try (0..<3).map { _ in try TestClient(port: server.boundPort) }
            for client in clients {
                try client.send(get("/echo"))
                XCTAssertEqual(try client.readResponse().status, 200)
            }
            let other = try TestClient(port: server.boundPort, localAddress: "127.0.0.2")
            try other.send(get("/echo"))
            XCTAssertEqual(try other.readResponse().status, 200)
            usleep(20_000)  // all listed idle

            let fourth = try TestClient(port: server.boundPort)
            try fourth.send(get("/echo?fourth"))
            XCTAssertEqual(try fourth.readResponse().header("X-Query"), "fourth")
            // One of the address's own idle connections made room; the other address's stays.
            XCTAssertTrue(eventually { clients.count(where: { !$0.isOpen }) == 1 })
            XCTAssertTrue(other.isOpen)
            XCTAssertEqual(server.evictedConnections, 1)
            XCTAssertEqual(server.addressRejectedConnections, 0)
            XCTAssertEqual(server.openConnections, 4)
        }
    }

    func testAnAddressWhoseConnectionsAreAllBusyIsRefusedAtItsCap() throws {
        try withServer(.testing { $0.maxConnectionsPerAddress = 3 }) { server in
            let busy = try (0..<3).map { _ in try TestClient(port: server.boundPort) }
            for client in busy { try client.send(get("/async?ms=1000")) }
            XCTAssertTrue(eventually { server.inFlightRequests == 3 })

            // Closed at once, without an answer; the address's connections carry on.
            let fourth = try TestClient(port: server.boundPort)
            try? fourth.send(get("/echo"))
            XCTAssertTrue(try fourth.readsEndOfStream(), "a fourth connection from one address was served")
            XCTAssertEqual(server.addressRejectedConnections, 1)
            XCTAssertEqual(server.evictedConnections, 0)

            // Another address is counted apart.
            let other = try TestClient(port: server.boundPort, localAddress: "127.0.0.2")
            try other.send(get("/remote"))
            XCTAssertTrue(try other.readResponse().text.hasPrefix("127.0.0.2:"))
            for client in busy { XCTAssertEqual(try client.readResponse().status, 200) }
        }
    }

    func testSilentSocketsFromOneAddressDoNotLockOutItsRealClient() throws {
        let cap = 8
        try withServer(.testing { $0.maxConnectionsPerAddress = cap }) { server in
            let silent = try (0..<(cap * 5)).map { _ in try TestClient(port: server.boundPort) }
            let start = DispatchTime.now()
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/echo?real"))
            XCTAssertEqual(try client.readResponse().header("X-Query"), "real")
            XCTAssertLessThan(seconds(since: start), 1.0)
            let evicted = silent.count + 1 - cap
            XCTAssertTrue(eventually { server.evictedConnections == evicted && silent.count(where: { !$0.isOpen }) == evicted })
            XCTAssertEqual(server.openConnections, cap)
            XCTAssertEqual(server.addressRejectedConnections, 0)
        }
    }

    func testAZeroCapLeavesAddressesUncapped() throws {
        try withServer(
            .testing {
                $0.maxConnectionsPerAddress = 0; $0.maxConnections = 300
            }
        ) { server in
            let clients = try (0..<300).map { _ in try TestClient(port: server.boundPort) }
            XCTAssertTrue(eventually { server.openConnections == 300 })
            try clients[299].send(get("/echo"))
            XCTAssertEqual(try clients[299].readResponse().status, 200)
            XCTAssertEqual(server.addressRejectedConnections, 0)
            XCTAssertEqual(server.evictedConnections, 0)
        }
    }

    // MARK: - Lifecycle

    func testShutdownWaitsForAnInFlightAsyncRequest() throws {
        let server = HTTPServer(configuration: .testing(), handler: TestHandler())
        try server.start()
        let idle = try TestClient(port: server.boundPort)
        try idle.send(get("/echo"))
        _ = try idle.readResponse()
        let busy = try TestClient(port: server.boundPort)
        try busy.send(get("/async?ms=300"))
        XCTAssertTrue(eventually { server.inFlightRequests == 1 })

        let start = DispatchTime.now()
        server.shutdown(timeout: 5)
        let elapsed = seconds(since: start)
        XCTAssertGreaterThan(elapsed, 0.2, "shutdown did not wait for the request")
        XCTAssertLessThan(elapsed, 2)
        let response = try busy.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Connection"), "close")
        XCTAssertTrue(try busy.readsEndOfStream())
        XCTAssertTrue(try idle.readsEndOfStream())
        XCTAssertEqual(server.openConnections, 0)
        XCTAssertEqual(server.inFlightRequests, 0)
        XCTAssertThrowsError(try TestClient(port: server.boundPort))
        server.shutdown(timeout: 1)  // idempotent
    }

    func testShutdownGivesUpAfterItsTimeout() throws {
        let server = HTTPServer(configuration: .testing(), handler: TestHandler())
        try server.start()
        let client = try TestClient(port: server.boundPort)
        try client.send(get("/never"))
        XCTAssertTrue(eventually { server.inFlightRequests == 1 })
        let start = DispatchTime.now()
        server.shutdown(timeout: 0.3)
        let elapsed = seconds(since: start)
        XCTAssertGreaterThan(elapsed, 0.25)
        XCTAssertLessThan(elapsed, 1.5)
        XCTAssertTrue(try client.readsEndOfStream())
        XCTAssertEqual(server.openConnections, 0)
        XCTAssertEqual(server.inFlightRequests, 0)
    }

    func testStopAcceptingKeepsExistingConnections() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/echo"))
            _ = try client.readResponse()
            server.stopAccepting()
            XCTAssertThrowsError(try TestClient(port: server.boundPort), "the port still accepts")
            try client.send(get("/echo?still"))
            XCTAssertEqual(try client.readResponse().header("X-Query"), "still")
            server.stopAccepting()
        }
    }

    func testBindFailureIsReportedClearly() throws {
        try withServer { server in
            let configuration = HTTPServerConfiguration.testing { $0.port = server.boundPort }
            let second = HTTPServer(configuration: configuration, handler: TestHandler())
            XCTAssertThrowsError(try second.start()) { error in
                XCTAssertEqual("\(error)", "127.0.0.1:\(server.boundPort): Address already in use")
                XCTAssertEqual((error as? HTTPServerError)?.kind, .bind)
            }
            second.shutdown(timeout: 0)
        }
    }

    func testInvalidConfigurationAndDoubleStartAreRejected() throws {
        let configuration = HTTPServerConfiguration.testing { $0.threads = 0 }
        XCTAssertThrowsError(try HTTPServer(configuration: configuration, handler: TestHandler()).start()) {
            XCTAssertEqual(($0 as? HTTPServerError)?.kind, .invalidConfiguration)
        }
        try withServer { server in
            XCTAssertThrowsError(try server.start()) {
                XCTAssertEqual(($0 as? HTTPServerError)?.kind, .notStartable)
            }
        }
    }

    // MARK: - Load

    func testFourThreadsManyConcurrentRequestsAllAnsweredCorrectly() throws {
        try withServer(.testing { $0.threads = 4 }) { server in
            let port = server.boundPort
            let clients = 16
            let requestsPerClient = 100
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: clients) { clientIndex in
                do {
                    let client = try TestClient(port: port)
                    for requestIndex in 0..<requestsPerClient {
                        let body = "client \(clientIndex) request \(requestIndex)"
                        let path = requestIndex % 10 == 0 ? "/async?ms=1" : "/echo"
                        try client.send(post(path, body))
                        let response = try client.readResponse()
                        if response.status != 200 || response.text != body {
                            failures.withLock { $0.append("\(response.status) \(response.text) for \(body)") }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("client \(clientIndex): \(error)") }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, [])
            XCTAssertTrue(eventually { server.inFlightRequests == 0 })
        }
    }
}
