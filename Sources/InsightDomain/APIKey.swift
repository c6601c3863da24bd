import Crypto

/// An API key: `ik_<keyId>_<secret>`. The key id (64 random bits, hex) finds the stored
/// record; the secret (256 random bits, base64url) is checked against its SHA-256 in
/// constant time. A plain hash suffices because the secret is random, not a password.
public struct APIKey: Sendable, Equatable {
    public let keyId: String
    public let secret: String

    /// The key as shown once to its owner.
    public var token: String { "ik_\(keyId)_\(secret)" }

    /// SHA-256 of the secret: the only form ever stored.
    public var secretHash: [UInt8] { SHA256.digest(Array(secret.utf8)) }

    /// A fresh random key.
    public static func generate() -> APIKey {
        APIKey(keyId: Hex.encode(SecureRandom.bytes(8)), secret: Base64URL.encode(SecureRandom.bytes(32)))
    }

    private init(keyId: String, secret: String) {
        self.keyId = keyId
        self.secret = secret
    }

    /// Parses a presented token; nil when it is not of our shape (no lookup is then needed).
    public init?(token: String) {
        let bytes = Array(token.utf8)
        guard bytes.count == 3 + 16 + 1 + 43, token.hasPrefix("ik_"), bytes[19] == UInt8(ascii: "_") else { return nil }
        let id = bytes[3..<19], secret = bytes[20...]
        guard id.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }),
            secret.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A)
                    || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
            })
        else { return nil }
        self.keyId = String(decoding: id, as: UTF8.self)
        self.secret = String(decoding: secret, as: UTF8.self)
    }

    /// True when this key's secret matches `storedHash`, compared in constant time.
    public func matches(_ storedHash: [UInt8]) -> Bool {
        ConstantTime.equals(secretHash, storedHash)
    }
}
