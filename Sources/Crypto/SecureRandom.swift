internal import COpenSSL
import Synchronization

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

    /// `count` (at most 256) random bytes for identifiers — event, insight and trace ids —
    /// taken from a process-wide buffer that is refilled 4 KiB at a time from the DRBG: each
    /// DRBG call costs a fork check (`getpid`) and locking, twice per request otherwise. Never
    /// for keys or secrets (use `bytes`). The buffer is not fork-safe: insightd never forks; a
    /// forked child would repeat its parent's next identifiers.
    public static func identifierBytes(_ count: Int) -> [UInt8] {
        identifierPool.take(count)
    }

    /// `count` (at most 256) random bytes from the identifier pool as lowercase hex (a trace id),
    /// encoded from the pool itself: no byte array and no second copy on every request.
    public static func hexIdentifier(bytes count: Int) -> String {
        identifierPool.withBytes(count) { Hex.encode($0) }
    }

    /// A random RFC 9562 version-4 UUID in its lowercase 8-4-4-4-12 form.
    public static func uuid() -> String {
        var b = bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        return format(b[...])
    }

    /// An RFC 9562 version-7 UUID: 48 bits of Unix milliseconds, then 74 random bits. Ids made
    /// in time order land next to each other in B-tree indexes, which keeps inserts cheap
    /// (random ids scatter them across pages: about 7 times the page writes per insert here).
    public static func uuidV7(milliseconds: Int64) -> String {
        uuidV7(count: 1, milliseconds: milliseconds)[0]
    }

    /// `count` (at most 16) version-7 UUIDs for the same millisecond, from one draw of
    /// identifier bytes.
    public static func uuidV7(count: Int, milliseconds: Int64) -> [String] {
        var random = identifierBytes(16 * count)
        let ms = UInt64(max(0, milliseconds))
        return (0..<count).map { n in
            let start = 16 * n
            for i in 0..<6 { random[start + i] = UInt8((ms >> (40 - 8 * UInt64(i))) & 0xFF) }
            random[start + 6] = (random[start + 6] & 0x0F) | 0x70
            random[start + 8] = (random[start + 8] & 0x3F) | 0x80
            return format(random[start..<(start + 16)])
        }
    }

    /// 16 bytes as 8-4-4-4-12 lowercase hex, written straight into a 36-byte buffer.
    private static func format(_ b: ArraySlice<UInt8>) -> String {
        String(unsafeUninitializedCapacity: 36) { out in
            var j = 0
            for (i, byte) in b.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 { out[j] = UInt8(ascii: "-"); j += 1 }
                out[j] = Hex.digits[Int(byte >> 4)]
                out[j + 1] = Hex.digits[Int(byte & 0x0F)]
                j += 2
            }
            return 36
        }
    }
}

/// The buffer behind `SecureRandom.identifierBytes`.
private final class IdentifierPool: Sendable {
    private struct Buffer: ~Copyable {
        var bytes = [UInt8](repeating: 0, count: IdentifierPool.size)
        var next = IdentifierPool.size
    }

    static let size = 4096
    private let buffer = Mutex(Buffer())

    func take(_ count: Int) -> [UInt8] {
        withBytes(count) { Array($0) }
    }

    /// Hands `body` the next `count` bytes (refilling the pool first when too few are left),
    /// under the pool's lock: `body` must be short.
    func withBytes<R: Sendable>(_ count: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        precondition(count >= 0 && count <= 256, "identifierBytes draws at most 256 bytes")
        return buffer.withLock { buffer in
            if buffer.next + count > buffer.bytes.count {
                let ok = buffer.bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
                precondition(ok == 1, "RAND_bytes failed")
                buffer.next = 0
            }
            let start = buffer.next
            buffer.next += count
            return buffer.bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<(start + count)])) }
        }
    }
}

private let identifierPool = IdentifierPool()
