/// Signs payloads as JWS (RFC 7515) compact serializations,
/// `BASE64URL(header).BASE64URL(payload).BASE64URL(signature)`, under one Ed25519 key (`alg`
/// `EdDSA`, RFC 8037). The protected header `{"alg":"EdDSA","kid":"…"}` and its encoding are
/// made once, here.
public final class JWSSigner: Sendable {
    public let keyId: String
    private let key: Ed25519SigningKey
    /// `BASE64URL(protected header) || '.'`: the start of every signing input.
    private let signingInputPrefix: [UInt8]

    public init(key: Ed25519SigningKey, keyId: String) {
        self.key = key
        self.keyId = keyId
        var header = Base64URL.encode(Array(Self.protectedHeader(keyId: keyId).utf8))
        header += "."
        signingInputPrefix = Array(header.utf8)
    }

    /// The protected header of a key id. The key id is base64url (a JWK thumbprint): nothing in
    /// it needs escaping.
    public static func protectedHeader(keyId: String) -> String {
        #"{"alg":"EdDSA","kid":"\#(keyId)"}"#
    }

    /// The compact serialization of `payload` signed; nil only if the signature fails.
    public func compactSerialization(of payload: [UInt8]) -> String? {
        var out = [UInt8]()
        out.reserveCapacity(
            signingInputPrefix.count + Base64URL.encodedCount(payload.count) + 1
                + Base64URL.encodedCount(Ed25519SigningKey.signatureLength))
        out += signingInputPrefix
        payload.withUnsafeBytes { Base64URL.append($0, to: &out) }
        guard let signature = out.withUnsafeBytes({ key.signature(for: $0) }) else { return nil }
        out.append(UInt8(ascii: "."))
        signature.withUnsafeBytes { Base64URL.append($0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }
}

/// JSON Web Key helpers for Ed25519 public keys (RFC 8037 `OKP` keys).
public enum Ed25519JWK {
    /// The RFC 7638 thumbprint of the key: BASE64URL(SHA-256 of its required members in
    /// lexicographic order, no whitespace). Used as the key's `kid`: it names the key itself,
    /// so anyone can recompute it from the JWKS.
    public static func thumbprint(publicKey: [UInt8]) -> String {
        let members = #"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(publicKey))"}"#
        return Base64URL.encode(SHA256.digest(members))
    }
}
