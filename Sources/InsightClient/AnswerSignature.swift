import Crypto
import Foundation

/// The proof that insightd gave an answer: the `Insight-Signature` of a `200` of
/// `POST /v1/evaluations` and the exact body bytes it signs. Store both with your transaction;
/// anyone holding the service's JWKS (`GET /v1/signing-keys`) can verify them later with
/// ``JSONWebKeySet/verify(body:signature:)``.
public struct AnswerSignature: Sendable, Hashable {
    /// The `Insight-Signature` header: a JWS compact serialization with a detached payload,
    /// `BASE64URL(header)..BASE64URL(signature)`.
    public let jws: String
    /// The key that signed (`kid` of the JWS header and of the JWKS).
    public let keyID: String
    /// The response body, byte for byte: the JWS payload.
    public let body: Data

    public init(jws: String, keyID: String, body: Data) {
        self.jws = jws
        self.keyID = keyID
        self.body = body
    }
}

/// Whether the evaluator verifies the signature of each answer.
public enum SignatureVerification: Sendable, Hashable {
    /// Every answer must carry a valid `Insight-Signature` by a key of the service's JWKS
    /// (the default); otherwise ``EvaluationError/signatureInvalid(detail:)``.
    case required
    /// Answers are not verified (a service that does not sign, such as an older version);
    /// ``InsightEvaluation/signature`` is then nil.
    case disabled
}

/// The public keys of a JWKS (RFC 7517) that can verify answers: Ed25519 `OKP` keys (RFC 8037)
/// for `EdDSA` signatures. Other keys of the set are ignored.
public struct JSONWebKeySet: Sendable {
    let keys: [String: Ed25519VerifyingKey]

    /// The ids of the usable keys.
    public var keyIDs: [String] { keys.keys.sorted() }

    /// Reads a JWKS document (the body of `GET /v1/signing-keys`).
    public init(jwks data: Data) throws(EvaluationError) {
        struct Document: Decodable {
            struct Key: Decodable { let kty: String?; let crv: String?; let x: String?; let kid: String?; let use: String?; let alg: String? }
            let keys: [Key]
        }
        let document = try APIClient.decode(Document.self, data)
        var keys: [String: Ed25519VerifyingKey] = [:]
        for key in document.keys where key.kty == "OKP" && key.crv == "Ed25519" && (key.use ?? "sig") == "sig"
            && (key.alg ?? "EdDSA") == "EdDSA" {
            guard let kid = key.kid, let x = key.x.flatMap(Base64URL.decode),
                  let publicKey = Ed25519VerifyingKey(rawRepresentation: x) else {
                throw .unexpectedResponse(detail: "the JWKS holds an Ed25519 key without a kid or a valid x")
            }
            keys[kid] = publicKey
        }
        self.keys = keys
    }

    /// The id of the key a signature names, without verifying anything.
    public static func keyID(of signature: String) throws(EvaluationError) -> String {
        try DetachedJWS(signature).keyID
    }

    /// Verifies that `signature` (an `Insight-Signature`) signs `body` under a key of this set;
    /// returns the proof. Throws ``EvaluationError/signatureInvalid(detail:)`` otherwise.
    @discardableResult
    public func verify(body: Data, signature: String) throws(EvaluationError) -> AnswerSignature {
        let jws = try DetachedJWS(signature)
        guard let key = keys[jws.keyID] else {
            throw .signatureInvalid(detail: "key \(jws.keyID) is not in the service's JWKS")
        }
        guard key.isValidSignature(jws.signature, for: jws.signingInput(payload: body)) else {
            throw .signatureInvalid(detail: "the signature does not match the body (key \(jws.keyID))")
        }
        return AnswerSignature(jws: signature, keyID: jws.keyID, body: body)
    }
}

/// A JWS compact serialization with a detached payload (RFC 7515 appendix F), as insightd makes
/// them: `alg` `EdDSA`, a `kid`, no other critical parameter.
struct DetachedJWS {
    let protectedHeader: Substring
    let keyID: String
    let signature: [UInt8]

    init(_ text: String) throws(EvaluationError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].isEmpty else {
            throw .signatureInvalid(detail: "Insight-Signature is not a JWS with a detached payload (header..signature)")
        }
        guard let headerBytes = Base64URL.decode(parts[0]),
              let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any] else {
            throw .signatureInvalid(detail: "the JWS header is not base64url JSON")
        }
        guard header["alg"] as? String == "EdDSA" else {
            throw .signatureInvalid(detail: "the JWS alg is not EdDSA")
        }
        // RFC 7515 §4.1.11: a critical extension this verifier does not know must fail.
        guard header["crit"] == nil else { throw .signatureInvalid(detail: "the JWS header names critical extensions") }
        guard let kid = header["kid"] as? String, !kid.isEmpty else {
            throw .signatureInvalid(detail: "the JWS header has no kid")
        }
        guard let signature = Base64URL.decode(parts[2]), signature.count == Ed25519SigningKey.signatureLength else {
            throw .signatureInvalid(detail: "the JWS signature is not 64 bytes of base64url")
        }
        protectedHeader = parts[0]
        keyID = kid
        self.signature = signature
    }

    /// `BASE64URL(protected header) . BASE64URL(payload)`.
    func signingInput(payload: Data) -> [UInt8] {
        var input = Array(protectedHeader.utf8)
        input.append(UInt8(ascii: "."))
        Array(payload).withUnsafeBytes { Base64URL.append($0, to: &input) }
        return input
    }
}

/// The service's JWKS as last fetched, fetched again (once, past any cache) when an answer
/// names a key it does not hold: a rotation's new key.
actor SigningKeyCache {
    private let client: APIClient
    private var keySet: JSONWebKeySet?

    init(client: APIClient) { self.client = client }

    /// Verifies an answer's signature; throws ``EvaluationError/signatureInvalid(detail:)``
    /// when it is missing or wrong, or the error of fetching the JWKS.
    func verify(body: Data, signature: String?) async throws(EvaluationError) -> AnswerSignature {
        guard let signature else {
            throw .signatureInvalid(detail: "the answer carries no Insight-Signature")
        }
        let keyID = try JSONWebKeySet.keyID(of: signature)
        var keys = try await current(refresh: false)
        if keys.keys[keyID] == nil { keys = try await current(refresh: true) }
        return try keys.verify(body: body, signature: signature)
    }

    private func current(refresh: Bool) async throws(EvaluationError) -> JSONWebKeySet {
        if !refresh, let keySet { return keySet }
        let response = try await client.send("GET", [InsightEvaluator.apiVersion, "signing-keys"], body: nil,
                                             bypassCache: refresh, options: RequestOptions())
        let fetched = try JSONWebKeySet(jwks: response.body)
        keySet = fetched
        return fetched
    }
}
