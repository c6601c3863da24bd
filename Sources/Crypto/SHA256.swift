internal import COpenSSL

/// SHA-256 over OpenSSL's low-level digest (see `SHA256.State`).
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var state = State()
        bytes.withUnsafeBytes { state.absorb($0) }
        return state.finish()
    }

    /// The digest of the message made of `parts`, one after another (no copy joins them).
    public static func digest(_ parts: UnsafeRawBufferPointer...) -> [UInt8] {
        var state = State()
        for part in parts { state.absorb(part) }
        return state.finish()
    }

    /// The digest of `string`'s UTF-8 bytes.
    public static func digest(_ string: String) -> [UInt8] { digest(Array(string.utf8)) }

    /// The digest as 64 lowercase hex characters.
    public static func hexDigest(_ bytes: [UInt8]) -> String { Hex.encode(digest(bytes)) }

    /// A digest in progress: OpenSSL's `SHA256_CTX`, a plain struct, so copying a state (an HMAC
    /// key's absorbed pad) is an assignment and nothing is allocated or freed.
    struct State {
        private var context = SHA256_CTX()

        init() {
            // Fails only for a null context, which this cannot be.
            precondition(insightd_sha256_init(&context) == 1, "SHA256_Init failed")
        }

        mutating func absorb(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            precondition(insightd_sha256_update(&context, base, bytes.count) == 1, "SHA256_Update failed")
        }

        /// Ends the digest, writing its 32 bytes to `digest`.
        mutating func finish(into digest: UnsafeMutablePointer<UInt8>) {
            precondition(insightd_sha256_final(digest, &context) == 1, "SHA256_Final failed")
        }

        mutating func finish() -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: 32) { buffer, count in
                finish(into: buffer.baseAddress!)
                count = 32
            }
        }
    }
}
