import Crypto
import HTTPServer
import InsightDomain
import JSON

extension InsightAPIHandler {
    /// How long verifiers and caches may keep the JWKS. A new key is published before it signs
    /// (`insightctl signing-keys rotate --activate-after`), and a verifier that meets an unknown
    /// `kid` fetches again with `Cache-Control: no-cache`.
    static let signingKeysMaxAge = 300

    /// `GET /v1/signing-keys`: the public keys that verify the heads of receipts (RFC 7517 JWKS of RFC 8037
    /// `OKP` keys): the current key, keys about to sign, and retired keys until their
    /// publication ends. No authentication: the keys are public.
    /// Its entity tag is the set's own hash, so a verifier that asks again with `If-None-Match`
    /// gets `304` until a key is added or leaves.
    func signingKeys(_ exchange: Exchange) {
        let keys = dependencies.signingKeys?.published() ?? []
        let body = Self.renderJWKS(keys)
        let response = Self.json(200, bytes: body, headers: [("Cache-Control", "public, max-age=\(Self.signingKeysMaxAge)")])
        exchange.send(
            Self.conditional(
                response, etag: "\"" + String(SHA256.hexDigest(body).prefix(32)) + "\"",
                request: exchange.request))
    }

    static func renderJWKS(_ keys: [SigningKey]) -> [UInt8] {
        var object = JSONObjectWriter()
        object.member("keys", objects: keys) { jwk, key in
            jwk.member("kty", "OKP")
            jwk.member("crv", "Ed25519")
            jwk.member("x", Base64URL.encode(key.publicKey))
            jwk.member("kid", key.keyId)
            jwk.member("use", "sig")
            jwk.member("alg", "EdDSA")
        }
        return object.bytes()
    }
}
