internal import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG (seeded from getrandom).
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBytes { buffer in
            RAND_bytes(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count))
        }
        // Without randomness no key or identifier is safe to issue: stop rather than degrade.
        precondition(ok == 1, "RAND_bytes failed")
        return out
    }

    /// A random RFC 9562 version-4 UUID in its lowercase 8-4-4-4-12 form.
    public static func uuid() -> String {
        var b = bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = Hex.encode(b)
        var out = ""
        out.reserveCapacity(36)
        for (i, c) in hex.enumerated() {
            if i == 8 || i == 12 || i == 16 || i == 20 { out.append("-") }
            out.append(c)
        }
        return out
    }
}
