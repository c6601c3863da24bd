import Foundation
import InsightApp

#if canImport(Glibc)
    import Glibc
#endif

/// One kept-open connection to a `TestDaemon`, for tests that look at the order of what comes
/// back (an interim `100 Continue`, an answer, the end of the stream) or hold sockets open.
/// Reads time out after `timeout` seconds, so a wrong server fails a test rather than hangs it.
public final class WireConnection {
    private let fd: Int32
    private var buffer: [UInt8] = []

    public init(port: Int, timeout: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AppError("socket failed") }
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw AppError("connect failed")
        }
    }

    deinit { close(fd) }

    /// Sends `text` whole.
    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw AppError("send failed") }
            sent += n
        }
    }

    /// The next response (an interim one too), with its body.
    public func readResponse() throws -> TestDaemon.Response {
        while true {
            if let end = headEnd() {
                let lines = String(decoding: buffer[0..<end], as: UTF8.self).lowercased().components(separatedBy: "\r\n")
                let length =
                    lines.first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if buffer.count >= end + 4 + length, let response = TestDaemon.parse(Array(buffer[0..<(end + 4 + length)])) {
                    buffer.removeFirst(end + 4 + length)
                    return response
                }
            }
            guard try fill() else { throw AppError("connection closed before a response") }
        }
    }

    /// Whether the daemon closes the connection with nothing more to read.
    /// Whether the daemon has closed the connection (or reset it) and sent nothing before, now,
    /// without waiting.
    public var isClosedByPeer: Bool {
        guard buffer.isEmpty else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    public func readsEndOfStream() throws -> Bool {
        buffer.isEmpty ? !(try fill()) : false
    }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n > 0 {
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
        if n == 0 || errno == ECONNRESET { return false }
        throw AppError("recv: \(String(cString: strerror(errno)))")
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        return (0...(buffer.count - 4)).first { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }
    }
}
