internal import COpenSSL

/// HMAC-SHA256 (RFC 2104).
public enum HMACSHA256 {
    /// The 32-byte tag of `message` under `key`. For many messages under one key, make an
    /// `HMACSHA256Key` once instead: this prepares the key on every call.
    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        HMACSHA256Key(key).authenticationCode(for: message)
    }
}

/// An HMAC-SHA256 key prepared once: the SHA-256 states after absorbing the key's inner and
/// outer pads (RFC 2104 §2), so each tag costs only the message's own compressions plus one.
///
/// Why not OpenSSL's one-shot `HMAC()`: in OpenSSL 3 every call fetches the MAC and digest
/// implementations by name (string compares under a process-wide lock) and rebuilds the pads;
/// profiling showed 8 such calls taking 9 % of an evaluation's CPU, contended across threads.
///
/// Owns two `EVP_MD_CTX` handles. They are written only in `init`; afterwards tags only copy
/// them (`EVP_MD_CTX_copy_ex` reads its source), so one key serves any number of threads.
public final class HMACSHA256Key: @unchecked Sendable {
    private let inner: OpaquePointer
    private let outer: OpaquePointer

    /// SHA-256's block size: keys are padded (or first hashed) to it.
    private static let blockSize = 64

    public init(_ key: [UInt8]) {
        var block = key.count > Self.blockSize ? SHA256.digest(key) : key
        block.append(contentsOf: repeatElement(0, count: Self.blockSize - block.count))
        inner = Self.absorbing(block.map { $0 ^ 0x36 })
        outer = Self.absorbing(block.map { $0 ^ 0x5C })
    }

    deinit {
        EVP_MD_CTX_free(inner)
        EVP_MD_CTX_free(outer)
    }

    private static func absorbing(_ pad: [UInt8]) -> OpaquePointer {
        // Allocation failures inside OpenSSL leave nothing sensible to do.
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        let ok = EVP_DigestInit_ex(context, SHA256.implementation, nil) == 1
            && pad.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) } == 1
        precondition(ok, "SHA-256 initialisation failed")
        return context
    }

    /// The 32-byte tag of `message`.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { authenticationCode(for: $0) }
    }

    private func authenticationCode(for message: UnsafeRawBufferPointer) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        var tag = [UInt8](repeating: 0, count: 32)
        let ok = tag.withUnsafeMutableBytes { tagBytes in
            let digest = tagBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            // Inner: H((K ^ ipad) || message); outer: H((K ^ opad) || inner).
            return EVP_MD_CTX_copy_ex(context, inner) == 1
                && (message.isEmpty || EVP_DigestUpdate(context, message.baseAddress, message.count) == 1)
                && EVP_DigestFinal_ex(context, digest, nil) == 1
                && EVP_MD_CTX_copy_ex(context, outer) == 1
                && EVP_DigestUpdate(context, digest, 32) == 1
                && EVP_DigestFinal_ex(context, digest, nil) == 1
        }
        precondition(ok, "HMAC-SHA256 failed")
        return tag
    }
}
