internal import COpenSSL
internal import CSodium

/// An Ed25519 private key (RFC 8032) that signs through libsodium, whose `crypto_sign_detached`
/// takes half the time of OpenSSL 3.0's (docs/performance/log/2026-12-05-libsodium-signing.md);
/// signatures are verified through OpenSSL (`Ed25519VerifyingKey`). This object owns the 64-byte
/// expanded secret key in memory of its own and overwrites it when it goes. Immutable after `init`,
/// so one key signs on any number of threads.
public final class Ed25519SigningKey: Sendable {
    /// The private key's length: the 32-byte seed of RFC 8032 §5.1.5.
    public static let seedLength = 32
    /// A signature's length.
    public static let signatureLength = 64

    // nonisolated(unsafe): written once in init, only read afterwards; freed in deinit.
    private nonisolated(unsafe) let secretKey: UnsafeMutablePointer<UInt8>
    /// The public key (32 bytes), as it goes into a JWK's `x`.
    public let publicKey: [UInt8]

    /// libsodium is ready (`sodium_init` is idempotent and thread-safe; it fails only without
    /// a source of randomness, which key generation here does not take from it).
    private static let sodiumReady = sodium_init() >= 0

    /// The key whose seed is `seed` (32 bytes); nil when it is not 32 bytes or libsodium refuses it.
    public init?(seed: [UInt8]) {
        guard seed.count == Self.seedLength, Self.sodiumReady else { return nil }
        let secretKey = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(crypto_sign_SECRETKEYBYTES))
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let made = seed.withUnsafeBufferPointer { crypto_sign_seed_keypair(&publicKey, secretKey, $0.baseAddress!) }
        guard made == 0 else {
            sodium_memzero(secretKey, Int(crypto_sign_SECRETKEYBYTES))
            secretKey.deallocate()
            return nil
        }
        self.secretKey = secretKey
        self.publicKey = publicKey
    }

    /// A new random key, and its seed (to be stored privately; this type never gives it out again).
    public static func generate() -> (key: Ed25519SigningKey, seed: [UInt8]) {
        let seed = SecureRandom.bytes(seedLength)
        // Any 32 bytes are an Ed25519 seed.
        guard let key = Ed25519SigningKey(seed: seed) else { preconditionFailure("crypto_sign_seed_keypair failed") }
        return (key, seed)
    }

    deinit {
        sodium_memzero(secretKey, Int(crypto_sign_SECRETKEYBYTES))
        secretKey.deallocate()
    }

    /// The 64-byte signature of `message` (pure Ed25519: the message itself, no prehash); nil
    /// only if libsodium fails.
    public func signature(for message: UnsafeRawBufferPointer) -> [UInt8]? {
        let signature = [UInt8](unsafeUninitializedCapacity: Self.signatureLength) { buffer, count in
            let ok = crypto_sign_detached(
                buffer.baseAddress!, nil, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                UInt64(message.count), secretKey)
            count = ok == 0 ? Self.signatureLength : 0
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
