import Crypto
import JSON

/// Checks a stored chain of receipt heads (`insightctl receipts verify`, docs/operations.md
/// "Receipts"): fed one chain's heads in sequence order from some point, it checks that each
/// is signed by a known key and names its chain (instance, tenant and environment; neither of
/// the last two for a chain made before migration 0024), that the sequence has no gap, that each
/// `previous` is the hash of the head before it, that time never goes back, and that the stored
/// leaf hashes give the signed size and root. It stops at the first break. The first head fed
/// is the trusted starting point: its own `previous` names a head before the walk (or one that
/// retention deleted).
public struct ReceiptChainAudit {
    /// The chain walked.
    public let chain: ReceiptChain
    /// The instance whose chain is walked.
    public var instance: String { chain.instance }
    /// Public keys by `kid` (every key of the signing key directory, retired ones included).
    private let keys: [String: Ed25519VerifyingKey]
    /// The last head that passed.
    public private(set) var last: SignedHead?
    /// The first head that passed.
    public private(set) var first: SignedHead?
    /// Heads and answers that passed.
    public private(set) var heads = 0
    public private(set) var answers = 0
    /// The first break: the sequence of the head that broke the chain, and why.
    public private(set) var broken: (sequence: Int64, reason: String)?

    public init(chain: ReceiptChain, keys: [String: Ed25519VerifyingKey]) {
        self.chain = chain
        self.keys = keys
    }

    /// Checks the next head; false once the chain is broken (then stop feeding it).
    @discardableResult
    public mutating func check(_ logged: LoggedHead) -> Bool {
        guard broken == nil else { return false }
        let signed = logged.signed, head = signed.head
        if let reason = Self.problem(with: logged, keys: keys, chain: chain, after: last) {
            broken = (head.sequence, reason)
            return false
        }
        if first == nil { first = signed }
        last = signed
        heads += 1
        answers += head.size
        return true
    }

    /// Why `logged` does not extend the chain after `last` (nil: it does).
    static func problem(
        with logged: LoggedHead, keys: [String: Ed25519VerifyingKey], chain: ReceiptChain,
        after last: SignedHead?
    ) -> String? {
        let signed = logged.signed, head = signed.head
        let parts = signed.jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let signature = Base64URL.decode(parts[2]),
            let kid = (try? JSONParser.parse(headerBytes))?["kid"]?.stringValue
        else {
            return "its JWS is malformed"
        }
        guard let key = keys[kid] else { return "it is signed by key \(kid), which the signing key directory does not hold" }
        guard key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)) else {
            return "its signature does not verify under key \(kid)"
        }
        guard head.chain == chain else { return "it names chain \(head.chain.name)" }
        if let last {
            guard head.sequence == last.head.sequence + 1 else {
                return "head \(last.head.sequence + 1) is missing: the next stored is \(head.sequence)"
            }
            guard head.previous == last.hash else { return "its previous is not the hash of head \(last.head.sequence)" }
            guard head.time >= last.head.time else { return "its time is earlier than head \(last.head.sequence)'s" }
        }
        let hashes = stride(from: 0, to: logged.leaves.count, by: MerkleTree.hashLength).map {
            Array(logged.leaves[$0..<min($0 + MerkleTree.hashLength, logged.leaves.count)])
        }
        guard hashes.count == head.size, logged.leaves.count == head.size * MerkleTree.hashLength else {
            return "it stores \(logged.leaves.count / MerkleTree.hashLength) leaf hashes for a tree of \(head.size)"
        }
        guard MerkleTree(leafHashes: hashes)?.root == head.root else { return "its stored leaves do not give its root" }
        return nil
    }
}
