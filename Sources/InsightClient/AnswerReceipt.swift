import Crypto
import Foundation

/// The proof that insightd gave an answer: the `Insight-Receipt` of a `200` of
/// `POST /v1/evaluations` and the exact body bytes it proves. Store both with your transaction;
/// anyone holding the service's JWKS (`GET /v1/signing-keys`) can verify them later with
/// ``JSONWebKeySet/verify(body:receipt:)``.
///
/// The answers the service commits together are the leaves of a Merkle tree (RFC 9162); the
/// tree's head is signed once, and the receipt gives the answer's place in the tree and the
/// hashes that lead from it to the signed root (docs/api.md, "Receipts").
public struct AnswerReceipt: Sendable, Hashable {
    /// The `Insight-Receipt` header, as received.
    public let header: String
    /// The signed head: a JWS compact serialization (EdDSA).
    public let head: String
    /// The key that signed the head (`kid` of the JWS header and of the JWKS).
    public let keyID: String
    /// The instance whose chain of heads the head extends.
    public let instance: String
    /// The head's position in its chain (``instance``, ``headScope``).
    public let sequence: Int64
    /// Answers in the head's tree.
    public let size: Int
    /// The tree's root hash.
    public let root: Data
    /// SHA-256 of the chain's previous head's serialization; nil for its first head.
    public let previous: Data?
    /// When the head was made, Unix milliseconds.
    public let time: Int64
    /// The answer's leaf index in the tree.
    public let index: Int
    /// The audit path, the leaf's neighbour first.
    public let path: [Data]
    /// The response body, byte for byte: the leaf.
    public let body: Data
    /// The tenant and the environment the body names (and the receipt therefore binds).
    public let scope: AnswerScope
    /// The tenant and the environment the head names, the body's: with ``instance``, the chain
    /// the head extends. Nil for a head made before heads were kept per tenant.
    public let headScope: AnswerScope?

    /// SHA-256 of the head's serialization: the next head's ``previous``.
    public var headHash: Data { Data(SHA256.digest(head)) }
}

/// Which tenant and environment answered: named by every answer's body, so bound by its receipt.
public struct AnswerScope: Sendable, Hashable {
    public let tenant: String
    public let environment: Environment

    public init(tenant: String, environment: Environment) {
        self.tenant = tenant
        self.environment = environment
    }
}

/// Whether the evaluator verifies the receipt of each answer.
public enum ReceiptVerification: Sendable, Hashable {
    /// Every answer must carry a valid `Insight-Receipt` whose head is signed by a key of the
    /// service's JWKS (the default); otherwise ``EvaluationError/receiptInvalid(detail:)``.
    case required
    /// Answers are not verified (a service that does not prove its answers, such as an older
    /// version); ``InsightEvaluation/receipt`` is then nil.
    case disabled
}

/// The public keys of a JWKS (RFC 7517) that can verify receipts' heads: Ed25519 `OKP` keys (RFC
/// 8037) for `EdDSA` signatures, each named by its RFC 7638 thumbprint. Other keys of the set are
/// ignored.
public struct JSONWebKeySet: Sendable {
    let keys: [String: Ed25519VerifyingKey]

    init(keys: [String: Ed25519VerifyingKey]) { self.keys = keys }

    /// The ids of the usable keys.
    public var keyIDs: [String] { keys.keys.sorted() }

    /// Reads a JWKS document (the body of `GET /v1/signing-keys`).
    public init(jwks data: Data) throws(EvaluationError) {
        struct Document: Decodable {
            struct Key: Decodable {
                let kty: String?; let crv: String?; let x: String?; let kid: String?; let use: String?; let alg: String?
            }
            let keys: [Key]
        }
        let document = try APIClient.decode(Document.self, data)
        var keys: [String: Ed25519VerifyingKey] = [:]
        for key in document.keys
        where key.kty == "OKP" && key.crv == "Ed25519" && (key.use ?? "sig") == "sig"
            && (key.alg ?? "EdDSA") == "EdDSA"
        {
            guard let kid = key.kid, let x = key.x.flatMap(Base64URL.decode),
                let publicKey = Ed25519VerifyingKey(rawRepresentation: x)
            else {
                throw .unexpectedResponse(detail: "the JWKS holds an Ed25519 key without a kid or a valid x")
            }
            // The kid names the key itself, so a pinned thumbprint pins the key, not a name.
            guard Ed25519JWK.thumbprint(publicKey: x) == kid else {
                throw .unexpectedResponse(detail: "kid \(kid) is not the RFC 7638 thumbprint of its key")
            }
            keys[kid] = publicKey
        }
        self.keys = keys
    }

    /// The id of the key a receipt's head names, without verifying anything.
    public static func keyID(of receipt: String) throws(EvaluationError) -> String {
        try SignedHeadJWS(try ReceiptHeader(receipt).head).keyID
    }

    /// Verifies that `receipt` (an `Insight-Receipt`) proves `body` under a key of this set:
    /// the head's signature, then the leaf's path to the head's root (docs/api.md, "Verifying
    /// a receipt", steps 1 to 6). Returns the proof; throws
    /// ``EvaluationError/receiptInvalid(detail:)`` otherwise.
    @discardableResult
    public func verify(body: Data, receipt: String) throws(EvaluationError) -> AnswerReceipt {
        let parsed = try ReceiptHeader(receipt)
        let jws = try SignedHeadJWS(parsed.head)
        guard let key = keys[jws.keyID] else {
            throw .receiptInvalid(detail: "key \(jws.keyID) is not in the service's JWKS")
        }
        guard key.isValidSignature(jws.signature, for: jws.signingInput) else {
            throw .receiptInvalid(detail: "the head's signature does not verify (key \(jws.keyID))")
        }
        let head = try jws.payload()
        let leaf = MerkleTree.leafHash(of: Array(body))
        guard
            MerkleTree.root(fromAuditPath: parsed.path.map(Array.init), leafHash: leaf, index: parsed.index, size: head.size)
                == Array(head.root)
        else {
            throw .receiptInvalid(detail: "the body and the audit path do not lead to the signed root")
        }
        struct Scope: Decodable { let tenant: String?; let environment: String? }
        guard let scope = try? JSONDecoder().decode(Scope.self, from: body), let tenant = scope.tenant,
            let environment = scope.environment
        else {
            throw .receiptInvalid(detail: "the answer names no tenant and environment")
        }
        if let headTenant = head.tenant, headTenant != tenant || head.environment != environment {
            throw .receiptInvalid(detail: "the head is tenant \(headTenant)'s in \(head.environment ?? ""), not the answer's")
        }
        let answered = AnswerScope(tenant: tenant, environment: Environment(rawValue: environment))
        return AnswerReceipt(
            header: receipt, head: parsed.head, keyID: jws.keyID, instance: head.instance, sequence: head.sequence,
            size: head.size, root: head.root, previous: head.previous, time: head.time, index: parsed.index,
            path: parsed.path, body: body, scope: answered, headScope: head.tenant == nil ? nil : answered)
    }
}

/// The members of an `Insight-Receipt`: an RFC 8941 dictionary with `head` (a string), `index`
/// (an integer) and `path` (an inner list of byte sequences), parsed strictly (RFC 8941 §4.2).
struct ReceiptHeader {
    let head: String
    let index: Int
    let path: [Data]

    init(_ text: String) throws(EvaluationError) {
        var scanner = Scanner8941(Array(text.utf8))
        var head: String?, index: Int?, path: [Data]?
        scanner.skipSpaces()
        while !scanner.atEnd {
            guard let key = scanner.key(), scanner.take(UInt8(ascii: "=")) else { throw Self.malformed("a member's key") }
            switch key {
            case "head": head = scanner.string()
            case "index": index = scanner.integer()
            case "path": path = scanner.byteSequences()
            default: guard scanner.skipBareItem() else { throw Self.malformed("member \(key)") }
            }
            if (key == "head" && head == nil) || (key == "index" && index == nil) || (key == "path" && path == nil) {
                throw Self.malformed("member \(key)")
            }
            scanner.skipWhitespace()
            if scanner.atEnd { break }
            guard scanner.take(UInt8(ascii: ",")) else { throw Self.malformed("the separator after \(key)") }
            scanner.skipWhitespace()
            if scanner.atEnd { throw Self.malformed("a trailing comma") }
        }
        guard let head, let index, let path else {
            throw .receiptInvalid(detail: "Insight-Receipt lacks head, index or path")
        }
        self.head = head
        self.index = index
        self.path = path
    }

    static func malformed(_ what: String) -> EvaluationError {
        .receiptInvalid(detail: "Insight-Receipt is not an RFC 8941 dictionary (\(what))")
    }
}

/// Reads the few RFC 8941 items a receipt holds.
struct Scanner8941 {
    let bytes: [UInt8]
    var at = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { at == bytes.count }

    mutating func take(_ byte: UInt8) -> Bool {
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    mutating func skipSpaces() { while at < bytes.count, bytes[at] == 0x20 { at += 1 } }
    mutating func skipWhitespace() { while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x09 { at += 1 } }

    /// `lcalpha / "*"` then `lcalpha / DIGIT / "_" / "-" / "." / "*"`.
    mutating func key() -> String? {
        guard at < bytes.count, (0x61...0x7A).contains(bytes[at]) || bytes[at] == 0x2A else { return nil }
        let start = at
        while at < bytes.count,
            (0x61...0x7A).contains(bytes[at]) || (0x30...0x39).contains(bytes[at])
                || [0x5F, 0x2D, 0x2E, 0x2A].contains(bytes[at])
        { at += 1 }
        return String(decoding: bytes[start..<at], as: UTF8.self)
    }

    mutating func string() -> String? {
        guard take(0x22) else { return nil }
        var out: [UInt8] = []
        while at < bytes.count {
            let c = bytes[at]
            at += 1
            if c == 0x5C {
                guard at < bytes.count, bytes[at] == 0x22 || bytes[at] == 0x5C else { return nil }
                out.append(bytes[at])
                at += 1
            } else if c == 0x22 {
                return String(decoding: out, as: UTF8.self)
            } else if c < 0x20 || c > 0x7E {
                return nil
            } else {
                out.append(c)
            }
        }
        return nil
    }

    /// An integer of at most 15 digits.
    mutating func integer() -> Int? {
        let start = at
        _ = take(0x2D)
        let digits = at
        while at < bytes.count, (0x30...0x39).contains(bytes[at]) { at += 1 }
        guard at > digits, at - digits <= 15 else { return nil }
        return Int(String(decoding: bytes[start..<at], as: UTF8.self))
    }

    /// `:base64:`.
    mutating func byteSequence() -> Data? {
        guard take(0x3A) else { return nil }
        let start = at
        while at < bytes.count, bytes[at] != 0x3A { at += 1 }
        guard at < bytes.count, let decoded = Base64.decode(String(decoding: bytes[start..<at], as: UTF8.self)) else { return nil }
        at += 1
        return Data(decoded)
    }

    /// `( :…: :…: )`.
    mutating func byteSequences() -> [Data]? {
        guard take(0x28) else { return nil }
        var out: [Data] = []
        skipSpaces()
        while !take(0x29) {
            guard let item = byteSequence() else { return nil }
            out.append(item)
            guard at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x29 else { return nil }
            skipSpaces()
        }
        return out
    }

    /// Any other member's value, skipped (a later service may add members): a string, an
    /// integer, a token, a byte sequence or an inner list of them.
    mutating func skipBareItem() -> Bool {
        guard at < bytes.count else { return false }
        switch bytes[at] {
        case 0x22: return string() != nil
        case 0x3A: return byteSequence() != nil
        case 0x28:
            at += 1
            while at < bytes.count, bytes[at] != 0x29 { at += 1 }
            return take(0x29)
        default:
            let start = at
            while at < bytes.count, bytes[at] != 0x2C, bytes[at] != 0x20 { at += 1 }
            return at > start
        }
    }
}

/// A head's JWS compact serialization as insightd makes them: `alg` `EdDSA`, a `kid`, no other
/// critical parameter, a payload of the head's members.
struct SignedHeadJWS {
    let keyID: String
    let signature: [UInt8]
    let signingInput: [UInt8]
    let payloadBytes: [UInt8]

    init(_ text: String) throws(EvaluationError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty else {
            throw .receiptInvalid(detail: "the receipt's head is not a JWS compact serialization")
        }
        guard let headerBytes = Base64URL.decode(parts[0]),
            let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any]
        else {
            throw .receiptInvalid(detail: "the JWS header is not base64url JSON")
        }
        guard header["alg"] as? String == "EdDSA" else { throw .receiptInvalid(detail: "the JWS alg is not EdDSA") }
        // RFC 7515 §4.1.11: a critical extension this verifier does not know must fail.
        guard header["crit"] == nil else { throw .receiptInvalid(detail: "the JWS header names critical extensions") }
        guard let kid = header["kid"] as? String, !kid.isEmpty else { throw .receiptInvalid(detail: "the JWS header has no kid") }
        guard let signature = Base64URL.decode(parts[2]), signature.count == Ed25519SigningKey.signatureLength else {
            throw .receiptInvalid(detail: "the JWS signature is not 64 bytes of base64url")
        }
        guard let payload = Base64URL.decode(parts[1]) else { throw .receiptInvalid(detail: "the JWS payload is not base64url") }
        keyID = kid
        self.signature = signature
        signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        payloadBytes = payload
    }

    struct Head {
        let instance: String
        /// Both or neither (a head made before heads were kept per tenant).
        let tenant: String?
        let environment: String?
        let sequence: Int64
        let size: Int
        let root: Data
        let previous: Data?
        let time: Int64
    }

    /// The head the payload holds (read after the signature verified).
    func payload() throws(EvaluationError) -> Head {
        struct Wire: Decodable {
            let instance: String
            let tenant: String?
            let environment: String?
            let sequence: Int64
            let size: Int
            let root: String
            let previous: String?
            let time: Int64
        }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(payloadBytes)), wire.size > 0, wire.sequence >= 0,
            let root = Base64URL.decode(wire.root), root.count == 32,
            (wire.tenant == nil) == (wire.environment == nil), wire.tenant?.isEmpty != true, wire.environment?.isEmpty != true
        else {
            throw .receiptInvalid(detail: "the head's payload is not a tree head")
        }
        var previous: Data?
        if let text = wire.previous {
            guard let hash = Base64URL.decode(text), hash.count == 32 else {
                throw .receiptInvalid(detail: "the head's previous is not a SHA-256 hash")
            }
            previous = Data(hash)
        }
        return Head(
            instance: wire.instance, tenant: wire.tenant, environment: wire.environment, sequence: wire.sequence, size: wire.size,
            root: Data(root), previous: previous,
            time: wire.time)
    }
}

/// The service's JWKS as last fetched, fetched again (once, past any cache) when a head names a
/// key it does not hold (a rotation's new key); and, per chain (instance, tenant, environment),
/// the newest head seen, so that the next head of that chain is checked to follow it. Answers
/// must all name one tenant and environment: the expected scope, or that of the first answer.
actor ReceiptVerifier {
    private let client: APIClient
    private var keySet: JSONWebKeySet?
    private var newest: [String: (sequence: Int64, head: String)] = [:]
    private var scope: AnswerScope?
    /// Nil: the fetched JWKS is trusted.
    private let pins: SigningKeyPins?

    init(client: APIClient, scope: AnswerScope?, pins: SigningKeyPins? = nil) {
        self.client = client
        self.scope = scope
        self.pins = pins
        keySet = pins.map { $0.apply(nil) }
    }

    /// Verifies an answer's receipt; throws ``EvaluationError/receiptInvalid(detail:)`` when
    /// it is missing or wrong, or the error of fetching the JWKS.
    func verify(body: Data, receipt: String?) async throws(EvaluationError) -> AnswerReceipt {
        guard let receipt else { throw .receiptInvalid(detail: "the answer carries no Insight-Receipt") }
        let keyID = try JSONWebKeySet.keyID(of: receipt)
        try pins?.admit(keyID)
        var keys = try await current(refresh: false)
        if keys.keys[keyID] == nil { keys = try await current(refresh: true) }
        let verified = try keys.verify(body: body, receipt: receipt)
        try checkScope(verified.scope)
        try checkChain(verified)
        return verified
    }

    private func checkScope(_ answered: AnswerScope) throws(EvaluationError) {
        guard let expected = scope else { return scope = answered }
        guard answered == expected else {
            throw .receiptInvalid(
                detail: "the answer is tenant \(answered.tenant)'s in \(answered.environment.rawValue), "
                    + "not \(expected.tenant)'s in \(expected.environment.rawValue)")
        }
    }

    /// The chain position, where this evaluator saw a neighbour: the same sequence is the same
    /// head, and the head after the newest seen names that one as `previous`.
    private func checkChain(_ receipt: AnswerReceipt) throws(EvaluationError) {
        let chain = [receipt.instance, receipt.headScope?.tenant ?? "", receipt.headScope?.environment.rawValue ?? ""]
            .joined(separator: "\u{0}")
        guard let seen = newest[chain] else {
            newest[chain] = (receipt.sequence, receipt.head)
            return
        }
        if receipt.sequence == seen.sequence, receipt.head != seen.head {
            throw .receiptInvalid(detail: "two heads \(receipt.sequence) of instance \(receipt.instance): its chain forked")
        }
        if receipt.sequence == seen.sequence + 1, receipt.previous != Data(SHA256.digest(seen.head)) {
            throw .receiptInvalid(detail: "head \(receipt.sequence) of instance \(receipt.instance) does not follow head \(seen.sequence)")
        }
        if receipt.sequence > seen.sequence { newest[chain] = (receipt.sequence, receipt.head) }
    }

    private func current(refresh: Bool) async throws(EvaluationError) -> JSONWebKeySet {
        if !refresh, let keySet { return keySet }
        let response = try await client.send(
            "GET", [InsightEvaluator.apiVersion, "signing-keys"], body: nil,
            bypassCache: refresh, options: RequestOptions())
        let fetched = try JSONWebKeySet(jwks: response.body)
        let usable = pins.map { $0.apply(fetched) } ?? fetched
        keySet = usable
        return usable
    }
}
