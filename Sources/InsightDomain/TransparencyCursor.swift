import Crypto

/// The opaque `cursor` of a transparency page (`POST /v1/subjects/transparency`): the position
/// of the page's last evaluation (its time and store sequence), sealed under a key of the
/// daemon's, so that a caller can neither forge a position nor read one.
///
/// A forged or altered cursor, or one handed out to another tenant or environment, does not
/// open (the API answers `422`), and the store-wide sequence inside (how many evaluations the
/// store holds) is not readable. The seal is deterministic, SIV-like, from HMAC-SHA256 only:
/// `tag` = HMAC(key, "mac" ‖ tenant ‖ environment ‖ position), first 16 bytes; the position is
/// XORed with HMAC(key, "pad" ‖ tag); the cursor is `tag ‖ sealed position` in base64url.
public enum TransparencyCursor {
    /// The purpose the cursor key is derived for (`HashKeyring.derivedKey`).
    public static let keyPurpose = "transparency cursor"

    /// `cursor` sealed for `tenant` and `environment` under `key`.
    public static func seal(_ cursor: SubjectHistoryCursor, tenant: String, environment: Environment, key: [UInt8]) -> String {
        let position = bytes(of: cursor)
        let tag = Array(mac(position, tenant: tenant, environment: environment, key: key).prefix(16))
        return Base64URL.encode(tag + zip(position, pad(tag, key: key)).map { $0 ^ $1 })
    }

    /// The position `text` seals for `tenant` and `environment` under `key`, or nil when it is
    /// not a cursor sealed so (forged, altered, another tenant's, or sealed under another key).
    public static func open(_ text: String, tenant: String, environment: Environment, key: [UInt8]) -> SubjectHistoryCursor? {
        guard text.utf8.count == 43, let sealed = Base64URL.decode(text), sealed.count == 32 else { return nil }
        let tag = Array(sealed[0..<16])
        let position = zip(sealed[16...], pad(tag, key: key)).map { $0 ^ $1 }
        let expected = Array(mac(position, tenant: tenant, environment: environment, key: key).prefix(16))
        guard ConstantTime.equals(tag, expected) else { return nil }
        func int(_ at: Int) -> Int64 { position[at..<at + 8].reduce(0) { $0 << 8 | Int64($1) } }
        return SubjectHistoryCursor(time: int(0), sequence: int(8))
    }

    private static func bytes(of cursor: SubjectHistoryCursor) -> [UInt8] {
        var bytes: [UInt8] = []
        for value in [cursor.time, cursor.sequence] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> Int64(shift))) }
        }
        return bytes
    }

    private static func mac(_ position: [UInt8], tenant: String, environment: Environment, key: [UInt8]) -> [UInt8] {
        // Lengths are fixed or end in a 0 byte (names hold none), so the fields cannot run into each other.
        let message = Array("mac\u{0}".utf8) + Array(tenant.utf8) + [0] + Array(environment.rawValue.utf8) + [0] + position
        return HMACSHA256.authenticationCode(for: message, key: key)
    }

    private static func pad(_ tag: [UInt8], key: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(for: Array("pad\u{0}".utf8) + tag, key: key).prefix(16))
    }
}
