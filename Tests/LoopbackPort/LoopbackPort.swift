#if canImport(Glibc)
    import Glibc
#endif

/// A TCP port on 127.0.0.1 that nothing listens on right now: the kernel's pick for port 0,
/// bound and released. For tests that start a server on a private port, or need a closed one.
/// Another process may take it before the caller binds it; callers that start servers retry.
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LoopbackPortError(message: "socket failed: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
        }
    }
    guard bound else { throw LoopbackPortError(message: "bind failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Why no port could be had. Safe to print.
public struct LoopbackPortError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
