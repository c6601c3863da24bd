internal import COpenSSL

/// SHA-256 over OpenSSL's one-shot EVP digest.
public enum SHA256 {
    /// The digest implementation to start SHA-256 contexts with, fetched once: `EVP_sha256()`
    /// is an implicit fetch that OpenSSL 3 resolves by name (under a process-wide lock) on every
    /// digest it starts. Never freed: process lifetime. (nonisolated(unsafe): an `EVP_MD` is
    /// immutable and OpenSSL lets any thread use it.)
    nonisolated(unsafe) static let implementation: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256()

    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                EVP_Digest(input.baseAddress, input.count,
                           output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length,
                           implementation, nil)
            }
        }
        // EVP_Digest only fails on allocation failure inside OpenSSL: nothing sensible remains.
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return out
    }

    /// The digest of `string`'s UTF-8 bytes.
    public static func digest(_ string: String) -> [UInt8] { digest(Array(string.utf8)) }

    /// The digest as 64 lowercase hex characters.
    public static func hexDigest(_ bytes: [UInt8]) -> String { Hex.encode(digest(bytes)) }
}
