internal import Glibc

/// Where a connection comes from, as the per-address cap counts it: an IPv4 address (also when
/// it reaches an IPv6 socket as `::ffff:a.b.c.d`), or the /64 prefix of an IPv6 address. One
/// host or site is given a whole /64, so counting full IPv6 addresses would let one client
/// open as many connections as it has addresses.
struct PeerAddress: Hashable, Sendable {
    /// The first 64 bits of the IPv6 form.
    private let high: UInt64
    /// The next 64 bits: `::ffff:` and the IPv4 address, or 0 for an IPv6 /64.
    private let low: UInt64

    /// The address of an IPv4 or IPv6 socket address; nil for other families.
    init?(_ address: UnsafePointer<sockaddr>?) {
        guard let address else { return nil }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let ip = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
            self.init(mappedIPv4: ip)
        case AF_INET6:
            let (high, low) = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                withUnsafeBytes(of: v6.pointee.sin6_addr) { bytes in
                    (
                        UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
                        UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                    )
                }
            }
            if high == 0 && low >> 32 == 0xFFFF {
                self.init(mappedIPv4: UInt32(truncatingIfNeeded: low))
            } else {
                self.init(high: high, low: 0)
            }
        default:
            return nil
        }
    }

    private init(mappedIPv4 ip: UInt32) {
        self.init(high: 0, low: 0xFFFF << 32 | UInt64(ip))
    }

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }
}
