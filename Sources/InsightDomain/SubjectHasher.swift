import Crypto

/// Turns raw subject identifiers into keyed hashes at the API edge:
/// HMAC-SHA256(key, kind || 0x00 || identifier), so that an account and a device with the
/// same text never share a hash, and nobody without the key can test a guess.
public struct SubjectHasher: Sendable {
    private let key: HMACSHA256Key
    /// A short public name of the key (first 8 bytes of SHA-256 over a label and the key),
    /// stored beside each hash so a rotation can tell which key made it.
    public let keyId: String

    /// Smallest acceptable key length in bytes.
    public static let minimumKeyLength = 32

    public init(key: [UInt8]) throws(HashKeyError) {
        guard key.count >= Self.minimumKeyLength else { throw HashKeyError.tooShort(key.count) }
        self.key = HMACSHA256Key(key)
        self.keyId = Hex.encode(Array(SHA256.digest(Array("insightd hash key id\u{0}".utf8) + key).prefix(8)))
    }

    /// The keyed hash of `identifier` as a subject of `kind`.
    public func hash(_ identifier: String, kind: IdentifierKind) -> [UInt8] {
        var kindName = kind.rawValue, identifier = identifier
        return kindName.withUTF8 { kindBytes in
            identifier.withUTF8 { identifierBytes in
                withUnsafeBytes(of: UInt8(0)) { separator in
                    key.authenticationCode(
                        for: UnsafeRawBufferPointer(kindBytes), separator,
                        UnsafeRawBufferPointer(identifierBytes))
                }
            }
        }
    }

    /// The keyed hash that names a caller's `requestId` for its retries (docs/api.md,
    /// "Retries"): HMAC-SHA256(key, "request" || 0x00 || caller id || 0x00 || requestId). The
    /// key is the tenant's, so the hash binds tenant, caller and requestId, and the requestId
    /// (which may be an identifier) is never stored.
    public func requestKey(callerId: String, requestId: String) -> [UInt8] {
        var callerId = callerId, requestId = requestId
        // Hashed in place (made for every request that names a requestId).
        return callerId.withUTF8 { caller in
            requestId.withUTF8 { request in
                Self.requestLabel.withUTF8Buffer { label in
                    withUnsafeBytes(of: UInt8(0)) { separator in
                        key.authenticationCode(
                            for: UnsafeRawBufferPointer(label), separator, UnsafeRawBufferPointer(caller),
                            separator, UnsafeRawBufferPointer(request))
                    }
                }
            }
        }
    }

    private static let requestLabel: StaticString = "request"
    private static let requestBodyLabel: StaticString = "request body"

    /// The keyed digest of a request's bytes (given as their SHA-256), kept to tell a retry from
    /// another request under the same `requestId`: keyed, since a body holds raw identifiers
    /// that a plain digest would let anyone test guesses against.
    public func requestDigest(_ sha256: [UInt8]) -> [UInt8] {
        Self.requestBodyLabel.withUTF8Buffer { label in
            withUnsafeBytes(of: UInt8(0)) { separator in
                sha256.withUnsafeBytes { digest in
                    key.authenticationCode(for: UnsafeRawBufferPointer(label), separator, digest)
                }
            }
        }
    }
}

/// A hash key that cannot be used.
public enum HashKeyError: Error, Equatable, CustomStringConvertible, Sendable {
    case tooShort(Int)
    case empty

    public var description: String {
        switch self {
        case .tooShort(let n): return "hash key is \(n) bytes; at least \(SubjectHasher.minimumKeyLength) are required"
        case .empty: return "the hash keyring holds no key"
        }
    }
}

/// A hashed subject's key in memory (velocity, the device limit): the first 8 bytes of its HMAC
/// hash. HMAC-SHA256 outputs spread evenly, so two distinct subjects share one with probability
/// 2^-64 per pair (docs/velocity.md); a plain integer is cheaper to keep, hash and compare than
/// the 32-byte array on every evaluation.
enum SubjectKey {
    static func of(_ hash: [UInt8]) -> UInt64 {
        var key: UInt64 = 0
        for (i, byte) in hash.prefix(8).enumerated() { key |= UInt64(byte) << (8 * UInt64(i)) }
        return key
    }
}
