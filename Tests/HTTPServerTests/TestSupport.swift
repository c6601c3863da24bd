import Dispatch
import Foundation
import Glibc
import HTTPServer
import Synchronization
import XCTest

/// A response as read off the wire by `TestClient`.
struct WireResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

struct TestClientError: Error, CustomStringConvertible {
    let description: String
}

/// A blocking HTTP/1.1 client over a plain POSIX socket, so the tests see exactly the bytes the
/// server sends. Reads time out after `timeout` seconds so a broken server fails, not hangs.
/// With `tls`, it handshakes first (throwing if refused) and speaks through the session.
/// `localAddress` binds the client to another loopback address (Linux routes all of 127/8
/// to the loopback interface), so tests can connect from several addresses.
final class TestClient {
    let socket: Int32
    /// The TLS session, when connected with `tls`.
    private(set) var tls: TLSClientSession?
    private var buffer: [UInt8] = []

    init(
        port: Int, timeout: Double = 5, receiveBuffer: Int32? = nil, tls: TLSClientSettings? = nil,
        localAddress: String? = nil
    ) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestClientError(description: "socket: \(errno)") }
        if let localAddress {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(localAddress)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let error = errno
                Glibc.close(socket)
                throw TestClientError(description: "bind: \(String(cString: strerror(error)))")
            }
        }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(socket)
            throw TestClientError(description: "connect: \(String(cString: strerror(error)))")
        }
        if let tls {
            do {
                self.tls = try TLSClientSession(socket: socket, settings: tls)
            } catch {
                Glibc.close(socket)
                throw error
            }
        }
    }

    private var closed = false

    deinit {
        close()
    }

    func close() {
        if !closed { Glibc.close(socket) }
        closed = true
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        if let tls {
            try bytes.withUnsafeBytes { try tls.write($0) }
            return
        }
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            guard result > 0 else { throw TestClientError(description: "send: \(String(cString: strerror(errno)))") }
            sent += result
        }
    }

    /// Reads more bytes; false at end of stream (or reset).
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        if let tls {
            let count = try chunk.withUnsafeMutableBytes { try tls.read(into: $0) }
            buffer.append(contentsOf: chunk[0..<count])
            return count > 0
        }
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        if count == 0 || errno == ECONNRESET { return false }
        throw TestClientError(description: "recv: \(String(cString: strerror(errno)))")
    }

    /// Reads one response; `head` says the request was HEAD (no body follows).
    func readResponse(head: Bool = false) throws -> WireResponse {
        var end: Int?
        while true {
            if let found = findHeadEnd() {
                end = found
                break
            }
            guard try fill() else { throw TestClientError(description: "connection closed before a response") }
        }
        let headText = String(decoding: buffer[0..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]) else {
            throw TestClientError(description: "bad status line in \(headText)")
        }
        let headers = lines.map { line -> (String, String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var response = WireResponse(status: status, headers: headers, body: [])
        if head || status < 200 || status == 204 || status == 304 { return response }
        guard let length = response.header("Content-Length").flatMap(Int.init) else {
            throw TestClientError(description: "no Content-Length in \(headText)")
        }
        while buffer.count < length {
            guard try fill() else { throw TestClientError(description: "connection closed inside a body") }
        }
        response.body = Array(buffer[0..<length])
        buffer.removeFirst(length)
        return response
    }

    /// Whether the server has not closed the connection: nothing to read yet and no end of
    /// stream or reset (plain sockets; does not wait).
    var isOpen: Bool {
        guard buffer.isEmpty else { return true }
        var byte: UInt8 = 0
        let count = recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count > 0 || (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    }

    /// Whether the server closes the connection (EOF or reset) with nothing more to read.
    func readsEndOfStream() throws -> Bool {
        if !buffer.isEmpty { return false }
        return try !fill()
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }
}

/// Requests of `/held?NAME`, answered when a test releases NAME (or at once, when it was
/// released before the request came).
enum HeldRequests {
    private static let held = Mutex<(waiting: [String: [(HTTPResponse, HTTPResponder)]], released: Set<String>)>(([:], []))

    static func hold(_ name: String, _ response: HTTPResponse, _ responder: HTTPResponder) {
        let now = held.withLock { state -> Bool in
            if state.released.contains(name) { return true }
            state.waiting[name, default: []].append((response, responder))
            return false
        }
        if now { responder.send(response) }
    }

    /// Answers the requests held under `name`, now and from now on.
    static func release(_ name: String) {
        let answers = held.withLock { state in
            state.released.insert(name)
            return state.waiting.removeValue(forKey: name) ?? []
        }
        for (response, responder) in answers { DispatchQueue.global().async { responder.send(response) } }
    }
}

/// The application the live tests serve.
///
/// - `/echo`: 200 with the request body; method, path and query in `X-Method`, `X-Path`, `X-Query`.
/// - `/async?ms=N`: the same, answered from another thread after N milliseconds.
/// - `/held?NAME`: the same, answered from another thread when the test calls
///   `HeldRequests.release("NAME")`: in progress for as long as the test needs, however slow the
///   machine.
/// - `/never`: never answered.
/// - `/twice`: answered twice (the second must be ignored).
/// - `/big?bytes=N`: N bytes of body.
/// - `/remote`: the remote address as the body.
/// - `/close`: answered with `Connection: close` by the handler.
/// - `/tls`: `tls=<isTLS> subject=<tlsPeerSubject or ->` as the body.
/// - `/thread`: the id of the loop thread serving the request, as the body.
/// - `/refuse`: with `Expect: 100-continue`, answered 403 before the body, with the declared
///   body length (or `chunked`) in `X-Declared`; without it, 200 like `/echo`.
struct TestHandler: HTTPHandler {
    /// Extra bytes appended to error bodies, to make an error response outlast the socket buffers.
    var errorPadding = 0

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        let parameters = Dictionary(
            (request.query ?? "").split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            },
            uniquingKeysWith: { $1 })
        var echo = HTTPResponse(status: 200, body: request.body)
        echo.headers.add("X-Method", request.method)
        echo.headers.add("X-Path", request.path)
        echo.headers.add("X-Query", request.query ?? "")
        switch request.path {
        case "/echo", "/refuse":
            responder.send(echo)
        case "/async":
            let delay = Int(parameters["ms"] ?? "0") ?? 0
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { [echo] in
                responder.send(echo)
            }
        case "/held":
            HeldRequests.hold(request.query ?? "", echo, responder)
        case "/never":
            break
        case "/twice":
            responder.send(HTTPResponse(status: 200, body: Array("first".utf8)))
            responder.send(HTTPResponse(status: 500, body: Array("second".utf8)))
        case "/big":
            let count = Int(parameters["bytes"] ?? "0") ?? 0
            responder.send(HTTPResponse(status: 200, body: [UInt8](repeating: UInt8(ascii: "b"), count: count)))
        case "/remote":
            responder.send(HTTPResponse(status: 200, body: Array(request.remoteAddress.utf8)))
        case "/close":
            responder.send(HTTPResponse(status: 200, headers: ["Connection": "close"]))
        case "/thread":
            responder.send(HTTPResponse(status: 200, body: Array(String(UInt(pthread_self())).utf8)))
        case "/tls":
            let text = "tls=\(request.isTLS) subject=\(request.tlsPeerSubject ?? "-")"
            responder.send(HTTPResponse(status: 200, body: Array(text.utf8)))
        default:
            responder.send(HTTPResponse(status: 404))
        }
    }

    func continueDecision(for head: HTTPRequest, declaredBodyLength: Int?) -> ContinueDecision {
        guard head.path == "/refuse" else { return .proceed }
        return .answer(
            HTTPResponse(
                status: 403, headers: ["X-Declared": declaredBodyLength.map(String.init) ?? "chunked"],
                body: Array("refused before the body".utf8)))
    }

    func response(for error: HTTPProtocolError) -> HTTPResponse {
        HTTPResponse(
            status: error.status, headers: ["Content-Type": "application/problem+json"],
            body: Array("{\"status\":\(error.status)}".utf8) + Array(repeating: 32, count: errorPadding))
    }
}

extension XCTestCase {
    /// Starts a server on an ephemeral port, runs `body`, then shuts it down.
    func withServer(
        _ configuration: HTTPServerConfiguration = .testing(),
        handler: TestHandler = TestHandler(),
        _ body: (HTTPServer) throws -> Void
    ) throws {
        let server = HTTPServer(configuration: configuration, handler: handler)
        try server.start()
        defer { server.shutdown(timeout: 1) }
        try body(server)
    }

    /// Polls `condition` until it holds or `timeout` seconds pass: a minute, so that a machine
    /// 20 times slower still meets it (a condition that holds costs no wait; only a failure waits).
    func eventually(_ timeout: Double = 60, _ condition: () -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while DispatchTime.now() < deadline {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }
}

extension HTTPServerConfiguration {
    /// The defaults on an ephemeral port, changed by `change`.
    static func testing(_ change: (inout HTTPServerConfiguration) -> Void = { _ in }) -> HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        change(&configuration)
        return configuration
    }
}

func get(_ path: String, _ extra: String = "") -> String {
    "GET \(path) HTTP/1.1\r\nHost: test\r\n\(extra)\r\n"
}

func post(_ path: String, _ body: String, _ extra: String = "") -> String {
    "POST \(path) HTTP/1.1\r\nHost: test\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
}

func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}
