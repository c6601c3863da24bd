import Crypto

/// The keys an application trusts to sign receipts' heads, whatever the JWKS of the base URL
/// lists. Without pins, an evaluator trusts the key set its base URL serves: a proxy between it
/// and insightd (an intercepting TLS proxy, a compromised gateway) can serve a key set of its own
/// and re-sign the answers it changes, and they verify. With pins, a head signed by any other
/// key fails with ``EvaluationError/receiptInvalid(detail:)`` (docs/api.md, "Receipts").
///
/// Pin the key published ahead of a rotation as well as the current one (docs/operations.md,
/// "Signing keys"): `insightctl signing-keys list` shows both kids.
public struct SigningKeyPins: Sendable {
    /// Pinned keys: they verify heads without a fetch.
    let keys: [String: Ed25519VerifyingKey]
    /// Every pinned kid (RFC 7638 thumbprint), of `keys` and of `thumbprints`.
    public let thumbprints: Set<String>
    /// Whether fetched keys that are not pinned are accepted too.
    public let allowsUnpinnedKeys: Bool

    /// Pins `keys` (a JWKS the operator hands out, e.g. `GET /v1/signing-keys` read over a
    /// trusted channel) and `thumbprints` (the kids of keys fetched when first needed; a fetched
    /// key not pinned is dropped). `allowUnpinnedKeys` accepts other fetched keys too, while
    /// rolling pins out (``AnswerReceipt/keyID`` tells which key signed). Pins that pin nothing
    /// (an empty list read from configuration) refuse every head rather than trust any key.
    public init(keys: JSONWebKeySet? = nil, thumbprints: [String] = [], allowUnpinnedKeys: Bool = false) {
        self.keys = keys?.keys ?? [:]
        self.thumbprints = Set(thumbprints).union(self.keys.keys)
        allowsUnpinnedKeys = allowUnpinnedKeys
    }

    /// Refuses a head whose key is not pinned, before any fetch.
    func admit(_ keyID: String) throws(EvaluationError) {
        guard allowsUnpinnedKeys || thumbprints.contains(keyID) else {
            let pinned = thumbprints.isEmpty ? "none" : thumbprints.sorted().joined(separator: ", ")
            throw .receiptInvalid(detail: "key \(keyID) is not pinned (pinned: \(pinned))")
        }
    }

    /// The key set to verify with: the pinned keys, and those of `fetched` that are pinned.
    func apply(_ fetched: JSONWebKeySet?) -> JSONWebKeySet {
        var keys = (fetched?.keys ?? [:]).filter { allowsUnpinnedKeys || thumbprints.contains($0.key) }
        keys.merge(self.keys) { $1 }
        return JSONWebKeySet(keys: keys)
    }
}
