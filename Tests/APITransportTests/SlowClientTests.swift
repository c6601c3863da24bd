import DaemonTesting
import Dispatch
import Foundation
import Synchronization
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Slow clients cannot lock everyone out (issue 45, item 1): four loopback addresses, each with
/// more sockets than fit, send request heads (or bodies) that never end and connect again when
/// closed, with no key. A connection still receiving its request may be closed to make room,
/// the address holding the most first, so each of an unrelated client's requests is answered.
/// (A client sharing an address with the attack shares its cap: docs/operations.md
/// "Connections".)
///
/// Small limits keep it cheap (32 places, 16 an address; the attack tries 64 sockets), and it
/// runs a few seconds, well inside the header timeout: what lets the other clients in is that
/// slow connections make room, not that they time out. No timed assertion: each request has
/// a minute to be answered, and a refusal (closed or reset without an answer) fails the test.
/// `bench/slowloris_probe.py` measures the full-size probe (docs/operations.md "Connections").
final class SlowClientTests: XCTestCase {
    func testSlowHeadLinesDoNotLockOutOtherClients() throws {
        try probe(.line)
    }

    func testSlowHeadBytesDoNotLockOutOtherClients() throws {
        try probe(.byte)
    }

    func testSlowBodiesDoNotLockOutOtherClients() throws {
        try probe(.body)
    }

    private static let limit = 32
    private static let perAddress = 16

    private func probe(_ mode: SlowClients.Mode) throws {
        let daemon = try TestDaemon(.live) {
            $0.maxConnections = Self.limit
            $0.maxConnectionsPerAddress = Self.perAddress
        }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let body = ConnectionLimitTests.evaluation
        let evaluation =
            "POST /v1/evaluations HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer \(key)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let livez = "GET /livez HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        // The key is seen (within the credential cache) before the attack begins.
        XCTAssertEqual(Self.exchange(port: daemon.port, from: "127.0.0.100", evaluation), 200)

        let attack = SlowClients(port: daemon.port, mode: mode, addresses: 4, socketsPerAddress: Self.perAddress)
        attack.start()
        defer { attack.stop() }
        // Every place is taken, by connections that have sent part of their request (a minute
        // at most: the wait is for a condition, not a time).
        let filled = DispatchTime.now() + 60
        while !(attack.rounds >= 2 && (try? ConnectionLimitTests.samples(daemon)["insightd_open_connections"]) == Double(Self.limit)) {
            guard DispatchTime.now() < filled else { return XCTFail("the attack did not fill the table") }
            usleep(20_000)
        }

        var answers: [String: [Int]] = [:]
        for _ in 0..<8 {
            for (name, source, request) in [
                ("GET /livez from 127.0.0.100", "127.0.0.100", livez),
                ("an evaluation from 127.0.0.100", "127.0.0.100", evaluation)
            ] {
                answers[name, default: []].append(Self.exchange(port: daemon.port, from: source, request))
            }
        }
        // The attack was still on: slow connections were closed to make room.
        let metrics = try ConnectionLimitTests.samples(daemon)
        let counts = metrics.filter { $0.key.hasPrefix("insightd_connections_") || $0.key == "insightd_open_connections" }
        for (name, statuses) in answers {
            XCTAssertEqual(statuses, Array(repeating: 200, count: statuses.count), "\(name) (0: refused, < 0: -errno); \(counts)")
        }
        XCTAssertGreaterThan(metrics[#"insightd_connections_evicted_total{reason="incomplete"}"#] ?? 0, 0)
        XCTAssertGreaterThan(attack.closedByServer, 0)
    }

    /// Sends `request` on a new connection from `source`; the answer's status, or 0 when the
    /// connection is closed (or reset) without one; below 0, the client could not connect or
    /// send (minus the errno: not the server's refusal).
    private static func exchange(port: Int, from source: String, _ request: String) -> Int {
        guard let fd = SlowClients.socket(from: source, blocking: true) else { return -Int(errno) }
        defer { close(fd) }
        var wait = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        guard SlowClients.connect(fd, port: port) else { return -Int(errno) }
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            return -Int(errno)
        }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            answer += chunk[0..<n]
        }
        // "HTTP/1.1 200 ..."
        guard answer.count >= 12 else { return 0 }
        return Int(String(decoding: answer[9..<12], as: UTF8.self)) ?? 0
    }
}

/// The attack: `addresses` loopback source addresses (127.0.0.1, ...) x `socketsPerAddress`
/// non-blocking sockets on one thread, each sending a request that never ends, a piece at a
/// time, and connecting again at once when the server closes it.
final class SlowClients: @unchecked Sendable {
    // @unchecked: the sockets are used only on the attack's thread; the counters are atomic.

    enum Mode {
        /// One header line every 0.5 s.
        case line
        /// One byte of a header line a second.
        case byte
        /// A whole head declaring a 100 KB body, then one body byte a second.
        case body

        var period: Double { self == .line ? 0.5 : 1 }
    }

    private let port: Int
    private let mode: Mode
    private let sources: [String]
    private let socketsPerAddress: Int
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Times every socket has been sent its next piece.
    private let roundCount = Atomic<Int>(0)
    private let closedCount = Atomic<Int>(0)

    var rounds: Int { roundCount.load(ordering: .relaxed) }
    /// Connections the server closed (or refused).
    var closedByServer: Int { closedCount.load(ordering: .relaxed) }

    init(port: Int, mode: Mode, addresses: Int, socketsPerAddress: Int) {
        self.port = port
        self.mode = mode
        sources = (1...addresses).map { "127.0.0.\($0)" }
        self.socketsPerAddress = socketsPerAddress
    }

    func start() {
        Thread.detachNewThread { [self] in
            run()
            done.signal()
        }
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        done.wait()
    }

    private struct Slot {
        var fd: Int32 = -1
        var sent = 0
    }

    private func run() {
        var slots = [Slot](repeating: Slot(), count: sources.count * socketsPerAddress)
        let head = "GET /livez HTTP/1.1\r\nHost: localhost\r\n"
        let byteStream = Array((head + "X-Slow: ").utf8)
        let bodyHead = Array(
            "POST /v1/evaluations HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
                .utf8)
        func piece(_ sent: Int) -> [UInt8] {
            switch mode {
            case .line: sent == 0 ? Array(head.utf8) : Array("X-Slow-\(sent): aaaaaaaa\r\n".utf8)
            case .byte: sent < byteStream.count ? [byteStream[sent]] : [UInt8(ascii: "a")]
            case .body: sent == 0 ? bodyHead : [UInt8(ascii: " ")]
            }
        }
        func reconnect(_ index: Int) {
            if slots[index].fd >= 0 {
                close(slots[index].fd)
                closedCount.add(1, ordering: .relaxed)
            }
            slots[index] = Slot()
            guard let fd = Self.socket(from: sources[index / socketsPerAddress], blocking: false) else { return }
            _ = Self.connect(fd, port: port)
            slots[index].fd = fd
        }
        for index in slots.indices { reconnect(index) }
        var nextRound = 0.0
        var polled = [pollfd](repeating: pollfd(), count: slots.count)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopping.load(ordering: .relaxed) {
            for index in slots.indices { polled[index] = pollfd(fd: slots[index].fd, events: Int16(POLLIN), revents: 0) }
            _ = poll(&polled, nfds_t(polled.count), 20)
            for index in slots.indices where polled[index].revents != 0 {
                // An answer (a 408) or the end of the stream: connect again once it is closed.
                let n = recv(slots[index].fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { reconnect(index) }
            }
            let now = Self.now()
            guard now >= nextRound else { continue }
            nextRound = now + mode.period
            for index in slots.indices {
                if slots[index].fd < 0 {
                    reconnect(index)
                    continue
                }
                let bytes = piece(slots[index].sent)
                let n = bytes.withUnsafeBytes { send(slots[index].fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n == bytes.count {
                    slots[index].sent += 1
                } else if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN {
                    reconnect(index)
                }
            }
            roundCount.add(1, ordering: .relaxed)
        }
        for slot in slots where slot.fd >= 0 { close(slot.fd) }
    }

    private static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// A TCP socket bound to `source` (a loopback address: Linux routes all of 127/8 there).
    static func socket(from source: String, blocking: Bool) -> Int32? {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | (blocking ? 0 : Int32(SOCK_NONBLOCK.rawValue)), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Connects `fd` to the daemon on loopback; a non-blocking socket may still be connecting.
    static func connect(_ fd: Int32, port: Int) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0 || errno == EINPROGRESS
    }
}
