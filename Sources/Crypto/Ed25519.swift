internal import COpenSSL

/// An Ed25519 private key (RFC 8032) held by OpenSSL: this object owns the `EVP_PKEY` and frees
/// it when it goes. Immutable after `init`, so one key signs on any number of threads (each
/// signature has its own `EVP_MD_CTX`).
public final class Ed25519SigningKey: Sendable {
    /// The private key's length: the 32-byte seed of RFC 8032 §5.1.5.
    public static let seedLength = 32
    /// A signature's length.
    public static let signatureLength = 64

    // nonisolated(unsafe): an OpenSSL key is read-only once built; OpenSSL allows concurrent use.
    private nonisolated(unsafe) let key: OpaquePointer
    /// The public key (32 bytes), as it goes into a JWK's `x`.
    public let publicKey: [UInt8]

    /// The key whose seed is `seed` (32 bytes); nil when OpenSSL refuses it.
    public init?(seed: [UInt8]) {
        guard seed.count == Self.seedLength,
              let key = seed.withUnsafeBufferPointer({
                  EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count)
              })
        else { return nil }
        guard let publicKey = Ed25519Raw.publicKey(of: key) else {
            EVP_PKEY_free(key)
            return nil
        }
        self.key = key
        self.publicKey = publicKey
    }

    /// A new random key, and its seed (to be stored privately; this type never gives it out again).
    public static func generate() -> (key: Ed25519SigningKey, seed: [UInt8]) {
        let seed = SecureRandom.bytes(seedLength)
        // Any 32 bytes are an Ed25519 seed: OpenSSL refuses one only when out of memory.
        guard let key = Ed25519SigningKey(seed: seed) else { preconditionFailure("EVP_PKEY_new_raw_private_key failed") }
        return (key, seed)
    }

    deinit { EVP_PKEY_free(key) }

    /// The 64-byte signature of `message` (pure Ed25519: the message itself, no prehash); nil
    /// only if OpenSSL fails (out of memory).
    public func signature(for message: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        // Ed25519 takes no digest: NULL, and the whole message in one call (EVP_DigestSign).
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else { return nil }
        var length = Self.signatureLength
        let signature = [UInt8](unsafeUninitializedCapacity: Self.signatureLength) { buffer, count in
            let ok = EVP_DigestSign(context, buffer.baseAddress, &length,
                                    message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count)
            count = ok == 1 && length == Self.signatureLength ? length : 0
        }
        return signature.count == Self.signatureLength ? signature : nil
    }

    /// The signature of `message`.
    public func signature(for message: [UInt8]) -> [UInt8]? {
        message.withUnsafeBytes { signature(for: $0) }
    }
}

/// An Ed25519 public key held by OpenSSL (this object owns the `EVP_PKEY`).
public final class Ed25519VerifyingKey: Sendable {
    public static let length = 32

    private nonisolated(unsafe) let key: OpaquePointer
    /// The key's 32 bytes.
    public let rawRepresentation: [UInt8]

    /// The key of these 32 bytes; nil when they are not 32 bytes or OpenSSL refuses them.
    public init?(rawRepresentation: [UInt8]) {
        guard rawRepresentation.count == Self.length,
              let key = rawRepresentation.withUnsafeBufferPointer({
                  EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count)
              })
        else { return nil }
        self.key = key
        self.rawRepresentation = rawRepresentation
    }

    deinit { EVP_PKEY_free(key) }

    /// True when `signature` is this key's Ed25519 signature of `message`.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == Ed25519SigningKey.signatureLength, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
        return signature.withUnsafeBufferPointer { s in
            message.withUnsafeBufferPointer { m in
                EVP_DigestVerify(context, s.baseAddress, s.count, m.baseAddress, m.count) == 1
            }
        }
    }
}

private enum Ed25519Raw {
    static func publicKey(of key: OpaquePointer) -> [UInt8]? {
        var length = Ed25519VerifyingKey.length
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            count = EVP_PKEY_get_raw_public_key(key, buffer.baseAddress, &length) == 1 ? length : 0
        }
        return bytes.count == Ed25519VerifyingKey.length ? bytes : nil
    }
}
