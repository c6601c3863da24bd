import Dispatch
import Foundation
import Glibc
import HTTPServer
import Synchronization
import XCTest

/// HTTPS: a real server on port 0 with certificates made for the run, driven by an OpenSSL
/// client (`TestClient` with `tls:`), by curl, and by plain sockets.
final class HTTPServerTLSTests: XCTestCase {
    override class func tearDown() {
        TestPKI.removeShared()
        super.tearDown()
    }

    private func makePKI() throws -> TestPKI {
        do {
            return try TestPKI.shared()
        } catch {
            if findExecutable("openssl") == nil { throw XCTSkip("no openssl command-line tool to make certificates") }
            throw error
        }
    }

    /// The testing defaults with TLS from `pki`, changed by `change`.
    private func tlsConfiguration(
        _ pki: TestPKI, clientCA: Bool = false, _ change: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) -> HTTPServerConfiguration {
        .testing {
            $0.tls = TLSConfiguration(
                certificatePath: pki.serverCertificate, privateKeyPath: pki.serverKey,
                clientCAPath: clientCA ? pki.caCertificate : nil)
            change(&$0)
        }
    }

    /// Asserts that a client with `settings` gets no answer: refused at the handshake, or (TLS 1.3
    /// verifies the client's certificate after the client finished) at the first read.
    private func assertRefused(
        port: Int, _ settings: TLSClientSettings, file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let client = try TestClient(port: port, tls: settings)
            try client.send(get("/tls"))
            let response = try client.readResponse()
            XCTFail("served \(response.status) \(response.text)", file: file, line: line)
        } catch {
            XCTAssertTrue("\(error)".contains("TLS") || "\(error)".contains("closed"), "\(error)", file: file, line: line)
        }
    }

    // MARK: - Serving

    func testKeepAliveRequestsOverTLS() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki)) { server in
            var settings = TLSClientSettings.trusting(pki)
            settings.alpn = ["h2", "http/1.1"]
            let client = try TestClient(port: server.boundPort, tls: settings)
            XCTAssertEqual(client.tls?.version, "TLSv1.3")
            XCTAssertEqual(client.tls?.alpnProtocol, "http/1.1")
            for index in 0..<3 {
                try client.send(post("/echo", "secret \(index)"))
                let response = try client.readResponse()
                XCTAssertEqual(response.status, 200)
                XCTAssertEqual(response.text, "secret \(index)")
            }
            try client.send(get("/tls"))
            XCTAssertEqual(try client.readResponse().text, "tls=true subject=-")
            XCTAssertEqual(server.openConnections, 1)

            // Connection: close ends with close_notify before the TCP close.
            try client.send(get("/echo", "Connection: close\r\n"))
            XCTAssertEqual(try client.readResponse().header("Connection"), "close")
            XCTAssertTrue(try client.readsEndOfStream())
            XCTAssertEqual(client.tls?.receivedCloseNotify, true)
            XCTAssertEqual(server.tlsHandshakeFailures, 0)
        }
    }

    func testPlainServerReportsNoTLS() throws {
        try withServer { server in
            let client = try TestClient(port: server.boundPort)
            try client.send(get("/tls"))
            XCTAssertEqual(try client.readResponse().text, "tls=false subject=-")
        }
    }

    func testPipelinedRequestsOverTLSAreAnsweredInOrder() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki)) { server in
            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            try client.send(get("/async?ms=100&id=1") + get("/echo?id=2") + post("/echo?id=3", "three"))
            let ids = try (0..<3).map { _ in try client.readResponse().header("X-Query") }
            XCTAssertEqual(ids, ["ms=100&id=1", "id=2", "id=3"])
        }
    }

    func testPipelinedRequestsBeforeAHalfCloseOverTLSAreAllAnswered() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki)) { server in
            // With close_notify, and with a bare TCP half-close (no close_notify: a dirty
            // shutdown, which must read as the end of the stream, not as an error).
            for cleanly in [true, false] {
                let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
                try client.send(get("/async?ms=50&id=1") + get("/echo?id=2"))
                if cleanly {
                    client.tls?.sendCloseNotify()
                } else {
                    Glibc.shutdown(client.socket, Int32(SHUT_WR))
                }
                let ids = try (0..<2).map { _ in try client.readResponse().header("X-Query") }
                XCTAssertEqual(ids, ["ms=50&id=1", "id=2"], "clean: \(cleanly)")
                XCTAssertTrue(try client.readsEndOfStream())
            }
            XCTAssertTrue(eventually { server.openConnections == 0 })
        }
    }

    func testCurlOverTLSWithKeepAliveAndClientCertificate() throws {
        let pki = try makePKI()
        guard let curl = findExecutable("curl") else { throw XCTSkip("curl is not installed") }
        try withServer(tlsConfiguration(pki)) { server in
            let base = "https://localhost:\(server.boundPort)"
            let common = ["-sS", "--cacert", pki.caCertificate, "--resolve", "localhost:\(server.boundPort):127.0.0.1"]
            // Two URLs, one connection: the second transfer makes no new connection.
            let twice = runProcess(
                curl,
                common + [
                    "-w", "%{http_code} %{num_connects} %{http_version}\\n",
                    "-o", "/dev/null", "\(base)/echo", "-o", "/dev/null", "\(base)/tls"
                ])
            XCTAssertEqual(twice.status, 0, twice.output)
            XCTAssertEqual(twice.output, "200 1 1.1\n200 0 1.1\n")
            // TLS 1.1 and lower: refused (curl exits 35, handshake failed).
            let old = runProcess(
                curl, common + ["--tlsv1.0", "--tls-max", "1.1", "--ciphers", "DEFAULT:@SECLEVEL=0", "\(base)/echo"])
            XCTAssertNotEqual(old.status, 0, old.output)
            XCTAssertTrue(eventually { server.tlsHandshakeFailures == 1 })
        }
        try withServer(tlsConfiguration(pki, clientCA: true)) { server in
            let base = "https://localhost:\(server.boundPort)"
            let common = ["-sS", "--cacert", pki.caCertificate, "--resolve", "localhost:\(server.boundPort):127.0.0.1"]
            let authenticated = runProcess(
                curl, common + ["--cert", pki.clientCertificate, "--key", pki.clientKey, "\(base)/tls"])
            XCTAssertEqual(authenticated.status, 0, authenticated.output)
            XCTAssertEqual(authenticated.output, "tls=true subject=\(TestPKI.clientSubject)")
            let anonymous = runProcess(curl, common + ["\(base)/tls"])
            XCTAssertNotEqual(anonymous.status, 0, anonymous.output)
            XCTAssertFalse(anonymous.output.contains("tls=true"))
        }
    }

    // MARK: - Versions and non-TLS clients

    /// A renewed certificate is loaded without a restart: connections accepted after the reload
    /// get it, one open before keeps working, and an unusable file leaves the certificate in use.
    func testReloadServesARenewedCertificateAndKeepsTheOldOneOnError() throws {
        let pki = try makePKI()
        let directory = NSTemporaryDirectory() + "insightd-reload-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = directory + "/server.pem", key = directory + "/server.key"
        func install(_ from: String, _ fromKey: String) throws {
            for (source, target) in [(from, certificate), (fromKey, key)] {
                try? FileManager.default.removeItem(atPath: target)
                try FileManager.default.copyItem(atPath: source, toPath: target)
            }
        }
        try install(pki.serverCertificate, pki.serverKey)
        let configuration = HTTPServerConfiguration.testing {
            $0.tls = TLSConfiguration(certificatePath: certificate, privateKeyPath: key)
        }
        try withServer(configuration) { server in
            let before = try TestClient(port: server.boundPort, tls: .trusting(pki))
            XCTAssertEqual(before.tls?.peerSubject, "/CN=localhost")
            try before.send(get("/tls"))
            XCTAssertEqual(try before.readResponse().status, 200)

            try install(pki.renewedServerCertificate, pki.renewedServerKey)
            XCTAssertTrue(try server.reloadTLS())
            let after = try TestClient(port: server.boundPort, tls: .trusting(pki))
            XCTAssertEqual(after.tls?.peerSubject, "/O=Renewed/CN=localhost")
            try after.send(get("/tls"))
            XCTAssertEqual(try after.readResponse().status, 200)
            try before.send(get("/tls"))  // the connection from before the reload goes on
            XCTAssertEqual(try before.readResponse().status, 200)

            try "not a certificate".write(toFile: certificate, atomically: false, encoding: .utf8)
            XCTAssertThrowsError(try server.reloadTLS()) { error in
                XCTAssertTrue("\(error)".contains(certificate), "the error names the file: \(error)")
            }
            let still = try TestClient(port: server.boundPort, tls: .trusting(pki))
            XCTAssertEqual(still.tls?.peerSubject, "/O=Renewed/CN=localhost", "a failed reload changed the certificate")
        }
        // A plain server has nothing to reload.
        try withServer { server in XCTAssertFalse(try server.reloadTLS()) }
    }

    func testTLS11AndLowerAreRefused() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki)) { server in
            for version in [TLSClientSettings.Version.tls1_0, .tls1_1] {
                var settings = TLSClientSettings.trusting(pki)
                settings.legacy = true
                settings.maximumVersion = version
                XCTAssertThrowsError(try TestClient(port: server.boundPort, tls: settings)) { error in
                    XCTAssertTrue("\(error)".contains("TLS handshake failed"), "\(error)")
                }
            }
            XCTAssertTrue(eventually { server.tlsHandshakeFailures == 2 })

            var tls12 = TLSClientSettings.trusting(pki)
            tls12.maximumVersion = .tls1_2
            let client = try TestClient(port: server.boundPort, tls: tls12)
            XCTAssertEqual(client.tls?.version, "TLSv1.2")
            try client.send(get("/echo?ok"))
            XCTAssertEqual(try client.readResponse().status, 200)
        }
    }

    func testMinimumVersionTLS13RefusesTLS12() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki) { $0.tls?.minimumVersion = .v1_3 }) { server in
            var tls12 = TLSClientSettings.trusting(pki)
            tls12.maximumVersion = .tls1_2
            XCTAssertThrowsError(try TestClient(port: server.boundPort, tls: tls12))
            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            XCTAssertEqual(client.tls?.version, "TLSv1.3")
            XCTAssertTrue(eventually { server.tlsHandshakeFailures == 1 })
        }
    }

    func testPlainHTTPToTheTLSPortGetsNoHTTPAnswerAndTheServerCarriesOn() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki)) { server in
            let plain = try TestClient(port: server.boundPort)
            try plain.send(get("/echo"))
            XCTAssertThrowsError(try plain.readResponse(), "a plain client got an HTTP answer")
            XCTAssertTrue(eventually { server.tlsHandshakeFailures == 1 && server.openConnections == 0 })

            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            try client.send(get("/echo?after"))
            XCTAssertEqual(try client.readResponse().header("X-Query"), "after")
        }
    }

    // MARK: - Client certificates

    func testClientCertificatesAreRequiredAndVerified() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki, clientCA: true)) { server in
            let port = server.boundPort
            assertRefused(port: port, .trusting(pki))
            assertRefused(
                port: port,
                TLSClientSettings.trusting(pki)
                    .presenting(certificate: pki.rogueClientCertificate, key: pki.rogueClientKey))
            // Same refusals when the certificate is checked inside the TLS 1.2 handshake.
            var tls12 = TLSClientSettings.trusting(pki)
            tls12.maximumVersion = .tls1_2
            assertRefused(port: port, tls12)
            assertRefused(
                port: port, tls12.presenting(certificate: pki.rogueClientCertificate, key: pki.rogueClientKey))
            XCTAssertTrue(eventually { server.tlsHandshakeFailures == 4 && server.openConnections == 0 })

            for settings in [TLSClientSettings.trusting(pki), tls12] {
                let client = try TestClient(
                    port: port, tls: settings.presenting(certificate: pki.clientCertificate, key: pki.clientKey))
                for _ in 0..<2 {
                    try client.send(get("/tls"))
                    let response = try client.readResponse()
                    XCTAssertEqual(response.status, 200)
                    XCTAssertEqual(response.text, "tls=true subject=\(TestPKI.clientSubject)")
                }
            }
            XCTAssertEqual(server.tlsHandshakeFailures, 4)
        }
    }

    // MARK: - Start-up errors

    func testUnusableCertificateOrKeyMakesStartThrowAClearError() throws {
        let pki = try makePKI()
        let garbage = pki.directory + "/garbage.pem"
        try "not a certificate\n".write(toFile: garbage, atomically: false, encoding: .utf8)
        let missing = pki.directory + "/missing.key"
        let unreadable = pki.directory + "/unreadable.key"
        try FileManager.default.copyItem(atPath: pki.serverKey, toPath: unreadable)
        chmod(unreadable, 0)
        defer { unlink(unreadable) }

        func startError(_ change: (inout TLSConfiguration) -> Void) -> HTTPServerError? {
            var tls = TLSConfiguration(certificatePath: pki.serverCertificate, privateKeyPath: pki.serverKey)
            change(&tls)
            let server = HTTPServer(configuration: .testing { $0.tls = tls }, handler: TestHandler())
            defer { server.shutdown(timeout: 0) }
            do {
                try server.start()
                return nil
            } catch {
                return error as? HTTPServerError
            }
        }

        let missingKey = startError { $0.privateKeyPath = missing }
        XCTAssertEqual(missingKey?.kind, .tls)
        XCTAssertEqual(missingKey?.message, "TLS private key \(missing): No such file or directory")

        if geteuid() != 0 {  // root reads anything
            XCTAssertEqual(
                startError { $0.privateKeyPath = unreadable }?.message,
                "TLS private key \(unreadable): Permission denied")
        }

        let mismatched = startError { $0.privateKeyPath = pki.clientKey }
        XCTAssertEqual(mismatched?.kind, .tls)
        XCTAssertTrue(
            mismatched?.message.hasPrefix(
                "TLS private key \(pki.clientKey) does not match the certificate \(pki.serverCertificate)") == true,
            mismatched?.message ?? "started")

        let notPEM = startError { $0.certificatePath = garbage }
        XCTAssertEqual(notPEM?.kind, .tls)
        XCTAssertTrue(notPEM?.message.hasPrefix("TLS certificate \(garbage): ") == true, notPEM?.message ?? "started")
        XCTAssertTrue(notPEM?.message.contains("no start line") == true, notPEM?.message ?? "started")

        let missingCertificate = startError { $0.certificatePath = pki.directory + "/none.pem" }
        XCTAssertEqual(missingCertificate?.message, "TLS certificate \(pki.directory)/none.pem: No such file or directory")

        let missingCA = startError { $0.clientCAPath = pki.directory + "/none-ca.pem" }
        XCTAssertEqual(missingCA?.message, "TLS client CA file \(pki.directory)/none-ca.pem: No such file or directory")

        let badCA = startError { $0.clientCAPath = garbage }
        XCTAssertEqual(badCA?.kind, .tls)
        XCTAssertTrue(badCA?.message.hasPrefix("TLS client CA file \(garbage): ") == true, badCA?.message ?? "started")

        let badCiphers = startError { $0.tls12Ciphers = "NO-SUCH-CIPHER" }
        XCTAssertEqual(badCiphers?.kind, .tls)

        XCTAssertEqual(startError { $0.privateKeyPath = "" }?.kind, .invalidConfiguration)
        XCTAssertNil(startError { _ in }, "the good files were refused")
    }

    // MARK: - Timeouts, limits and lingering close over TLS

    func testStalledHandshakeIsClosedAfterTheRequestTimeout() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki) { $0.requestTimeout = 1 }) { server in
            let client = try TestClient(port: server.boundPort)
            try client.send([0x16, 0x03, 0x01])  // the start of a TLS record, then nothing
            let start = DispatchTime.now()
            XCTAssertTrue(try client.readsEndOfStream())
            let elapsed = seconds(since: start)
            XCTAssertGreaterThan(elapsed, 0.9)
            XCTAssertLessThan(elapsed, 2.5)
            XCTAssertTrue(eventually { server.tlsHandshakeFailures == 1 && server.openConnections == 0 })
        }
    }

    func testSlowRequestOverTLSGets408() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki) { $0.headerTimeout = 1 }) { server in
            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            let start = DispatchTime.now()
            try client.send("GET /echo HTTP/1.1\r\nX-Slow: a")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 408)
            XCTAssertGreaterThan(seconds(since: start), 0.9)
            XCTAssertLessThan(seconds(since: start), 2.5)
            XCTAssertTrue(try client.readsEndOfStream())
            XCTAssertEqual(client.tls?.receivedCloseNotify, true)
        }
    }

    func testSilentTLSConnectionIsClosedAfterTheHeaderTimeout() throws {
        let pki = try makePKI()
        try withServer(
            tlsConfiguration(pki) {
                $0.headerTimeout = 1; $0.idleTimeout = 60
            }
        ) { server in
            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            let start = DispatchTime.now()
            XCTAssertTrue(try client.readsEndOfStream())
            XCTAssertGreaterThan(seconds(since: start), 0.9)
            XCTAssertLessThan(seconds(since: start), 3)
            XCTAssertTrue(eventually { server.openConnections == 0 })
            XCTAssertEqual(server.tlsHandshakeFailures, 0)
        }
    }

    func testIdleTLSConnectionIsClosedAfterTheIdleTimeout() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki) { $0.idleTimeout = 1 }) { server in
            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            try client.send(get("/echo"))
            XCTAssertEqual(try client.readResponse().status, 200)
            let start = DispatchTime.now()
            XCTAssertTrue(try client.readsEndOfStream())
            XCTAssertGreaterThan(seconds(since: start), 0.9)
            XCTAssertLessThan(seconds(since: start), 2.5)
            XCTAssertEqual(client.tls?.receivedCloseNotify, true)
            XCTAssertTrue(eventually { server.openConnections == 0 })
            XCTAssertEqual(server.tlsHandshakeFailures, 0)
        }
    }

    func testTLSClientThatNeverReadsIsDroppedAfterTheWriteTimeout() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki) { $0.writeTimeout = 1 }) { server in
            let client = try TestClient(port: server.boundPort, receiveBuffer: 4096, tls: .trusting(pki))
            // The write timeout runs from when the response starts to drain, after the send:
            // measured from the send, the drop cannot come before it.
            let start = DispatchTime.now()
            try client.send(get("/big?bytes=\(32 << 20)"))
            XCTAssertTrue(eventually { server.openConnections == 1 && server.inFlightRequests == 0 })
            XCTAssertTrue(eventually(4) { server.openConnections == 0 }, "the stalled connection was kept")
            XCTAssertGreaterThan(seconds(since: start), 0.95)
        }
    }

    func testOversizedBodyOverTLSIsAnsweredAndTheRestDrained() throws {
        // Without the lingering close the server would close with the body unread: the client's
        // writes would then fail with a reset, and the 413 would be lost with it.
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki) { $0.maxBodyBytes = 1024 }) { server in
            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(4 << 20)\r\n\r\n")
            try client.send([UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20))
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 413)
            XCTAssertEqual(response.header("Connection"), "close")
            XCTAssertTrue(try client.readsEndOfStream())
            XCTAssertEqual(client.tls?.receivedCloseNotify, true)
            XCTAssertEqual(server.openConnections, 1, "the server stopped lingering before the client closed")
            client.close()
            XCTAssertTrue(eventually { server.openConnections == 0 })
        }
    }

    func testTLSHeaderLimitIsEnforced() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki) { $0.maxHeaderBytes = 1024 }) { server in
            let client = try TestClient(port: server.boundPort, tls: .trusting(pki))
            try client.send(get("/echo", "X-Big: \(String(repeating: "x", count: 2000))\r\n"))
            XCTAssertEqual(try client.readResponse().status, 431)
            XCTAssertTrue(try client.readsEndOfStream())
        }
    }

    func testShutdownFinishesAnInFlightTLSRequest() throws {
        let pki = try makePKI()
        let server = HTTPServer(configuration: tlsConfiguration(pki), handler: TestHandler())
        try server.start()
        let idle = try TestClient(port: server.boundPort, tls: .trusting(pki))
        let busy = try TestClient(port: server.boundPort, tls: .trusting(pki))
        try busy.send(get("/async?ms=300"))
        XCTAssertTrue(eventually { server.inFlightRequests == 1 })
        server.shutdown(timeout: 5)
        let response = try busy.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Connection"), "close")
        XCTAssertTrue(try busy.readsEndOfStream())
        XCTAssertTrue(try idle.readsEndOfStream())
        XCTAssertEqual(server.openConnections, 0)
    }

    func testManyTLSClientsOnFourThreads() throws {
        let pki = try makePKI()
        try withServer(tlsConfiguration(pki, clientCA: true) { $0.threads = 4 }) { server in
            let port = server.boundPort
            let settings = TLSClientSettings.trusting(pki)
                .presenting(certificate: pki.clientCertificate, key: pki.clientKey)
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { clientIndex in
                do {
                    let client = try TestClient(port: port, tls: settings)
                    for requestIndex in 0..<25 {
                        let body = "client \(clientIndex) request \(requestIndex)"
                        try client.send(post(requestIndex % 5 == 0 ? "/async?ms=1" : "/echo", body))
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
            XCTAssertEqual(server.tlsHandshakeFailures, 0)
        }
    }
}
