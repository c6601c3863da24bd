import Crypto
import JSON

/// A chain of heads (docs/api.md, "Receipts"): an instance's heads of one tenant's answers in one
/// environment. Heads made before migration 0024 mixed every tenant's answers in one chain per
/// instance: their chain has no tenant and no environment (stored as empty text).
public struct ReceiptChain: Sendable, Hashable {
    public let instance: String
    public let tenant: String?
    public let environment: String?

    public init(instance: String, tenant: String?, environment: String?) {
        self.instance = instance
        self.tenant = tenant
        self.environment = environment
    }

    /// How the chain is named in messages: `instance`, or `instance/tenant/environment`.
    public var name: String {
        guard let tenant, let environment else { return instance }
        return "\(instance)/\(tenant)/\(environment)"
    }
}

/// What a signed tree head says (docs/api.md, "Receipts"): the instance whose writer committed
/// a batch of answers, the tenant and environment whose answers they are, the head's place in
/// that chain, the Merkle tree of the batch's answers, the hash of the chain's previous head, and
/// when it was made.
public struct ReceiptHead: Sendable, Equatable {
    /// The instance whose chain the head extends (`InstanceIdentity`).
    public let instance: String
    /// The tenant and environment of every answer of the tree; nil in a head made before
    /// migration 0024, whose tree mixed them.
    public let tenant: String?
    public let environment: String?
    /// The head's position in its instance's chain: 0 for the first, then one more each time.
    public let sequence: Int64
    /// Leaves (answers) of the tree.
    public let size: Int
    /// The tree's root hash (32 bytes).
    public let root: [UInt8]
    /// SHA-256 of the previous head's compact serialization; nil for an instance's first head.
    public let previous: [UInt8]?
    /// When the head was made, Unix milliseconds; never earlier than the previous head's.
    public let time: Milliseconds

    public init(
        instance: String, tenant: String? = nil, environment: String? = nil, sequence: Int64, size: Int, root: [UInt8],
        previous: [UInt8]?, time: Milliseconds
    ) {
        self.instance = instance
        self.tenant = tenant
        self.environment = environment
        self.sequence = sequence
        self.size = size
        self.root = root
        self.previous = previous
        self.time = time
    }

    /// The chain the head extends.
    public var chain: ReceiptChain { ReceiptChain(instance: instance, tenant: tenant, environment: environment) }

    /// The JWS payload: `{"instance","tenant","environment","sequence","size","root","previous","time"}`,
    /// the hashes in base64url, `previous` null for a first head; without `tenant` and
    /// `environment` for a head of no tenant (made before migration 0024).
    public var payload: [UInt8] {
        var object = JSONObjectWriter(capacity: 256)
        object.member("instance", instance)
        if let tenant, let environment {
            object.member("tenant", tenant)
            object.member("environment", environment)
        }
        object.member("sequence", Double(sequence))
        object.member("size", Double(size))
        object.member("root", Base64URL.encode(root))
        object.member("previous", previous.map { .string(Base64URL.encode($0)) } ?? .null)
        object.member("time", Double(time))
        return object.bytes()
    }

    /// Reads a payload; nil unless it holds every member with its type (hashes of 32 bytes), and
    /// `tenant` and `environment` both or neither.
    public init?(payload: [UInt8]) {
        guard let object = try? JSONParser.parse(payload), let instance = object["instance"]?.stringValue,
            (object["tenant"] == nil) == (object["environment"] == nil),
            object["tenant"].map({ $0.stringValue?.isEmpty == false }) ?? true,
            object["environment"].map({ $0.stringValue?.isEmpty == false }) ?? true,
            let sequence = object["sequence"]?.intValue, sequence >= 0, let size = object["size"]?.intValue, size > 0,
            let root = object["root"]?.stringValue.flatMap(Base64URL.decode), root.count == MerkleTree.hashLength,
            let previousValue = object["previous"], let time = object["time"]?.intValue
        else { return nil }
        var previous: [UInt8]?
        if previousValue != .null {
            guard let hash = previousValue.stringValue.flatMap(Base64URL.decode), hash.count == MerkleTree.hashLength else {
                return nil
            }
            previous = hash
        }
        self.init(
            instance: instance, tenant: object["tenant"]?.stringValue, environment: object["environment"]?.stringValue,
            sequence: Int64(sequence), size: size, root: root, previous: previous, time: Milliseconds(time))
    }
}

/// A head with its signature: the compact JWS of its payload (EdDSA, the signing key's `kid`).
public struct SignedHead: Sendable, Equatable {
    public let head: ReceiptHead
    /// The compact serialization `BASE64URL(header).BASE64URL(payload).BASE64URL(signature)`.
    public let jws: String

    public init(head: ReceiptHead, jws: String) {
        self.head = head
        self.jws = jws
    }

    /// SHA-256 of the compact serialization: the next head's `previous`.
    public var hash: [UInt8] { SHA256.digest(jws) }
}

/// The proof that an answer was given: the signed head of the batch it was committed in, the
/// answer's leaf index in that batch's tree, and the leaf's audit path.
public struct Receipt: Sendable {
    public let head: SignedHead
    public let index: Int
    /// The batch's tree, shared by every receipt of the batch; a path is read off it when asked.
    private let tree: MerkleTree

    public init(head: SignedHead, index: Int, tree: MerkleTree) {
        self.head = head
        self.index = index
        self.tree = tree
    }

    /// The audit path (RFC 9162 §2.1.3.1), the leaf's neighbour first.
    public var path: [[UInt8]] { tree.auditPath(for: index) }

    /// Hands each hash of the audit path to `visit`, in order, without copying it.
    public func visitPath(_ visit: (UnsafeRawBufferPointer) -> Void) { tree.visitAuditPath(for: index, visit) }
}

/// The receipts of one batch: its tree, its signed head, and its leaves as stored beside the head.
public struct ReceiptBatch: Sendable {
    public let tree: MerkleTree
    public let head: SignedHead
    /// The leaf hashes, concatenated in index order (32 bytes each): kept with the head, so that
    /// the root can be checked again after the answers themselves are purged.
    public let leaves: [UInt8]

    /// The receipt of the leaf at `index`.
    public func receipt(at index: Int) -> Receipt { Receipt(head: head, index: index, tree: tree) }
}

/// Where an instance's chain of heads stands: its last committed head.
public struct ChainTip: Sendable, Equatable {
    public let sequence: Int64
    public let hash: [UInt8]
    public let time: Milliseconds

    public init(sequence: Int64, hash: [UInt8], time: Milliseconds) {
        self.sequence = sequence
        self.hash = hash
        self.time = time
    }

    /// The tip after `head`.
    public init(_ head: SignedHead) {
        self.init(sequence: head.head.sequence, hash: head.hash, time: head.head.time)
    }
}

/// Where the head of an answer's chain in the batch being committed stands: known to the writer
/// before it runs the batch's jobs (a chain moves only once the batch commits), so that a retry
/// entry stored by one of them names the head its first answer's receipt is read from
/// (docs/api.md, "Retries").
public struct HeadPlace: Sendable, Equatable {
    public let chain: ReceiptChain
    public let sequence: Int64

    public init(chain: ReceiptChain, sequence: Int64) {
        self.chain = chain
        self.sequence = sequence
    }
}

/// An answer's leaf hash, and the tenant and environment whose chain its head extends.
public struct ReceiptLeaf: Sendable {
    public let hash: [UInt8]
    public let tenant: String
    public let environment: String

    public init(hash: [UInt8], tenant: String, environment: String) {
        self.hash = hash
        self.tenant = tenant
        self.environment = environment
    }

    /// Whether the leaf is of `tenant` and `environment`'s chain.
    public func belongs(to tenant: String, _ environment: String) -> Bool {
        self.tenant == tenant && self.environment == environment
    }
}

/// Makes the receipts of one writer's batches (docs/api.md "Receipts"): the answers of one
/// tenant and environment committed together are the leaves of a Merkle tree whose head is
/// signed once, chained to the previous head of the instance's chain of that tenant and
/// environment (a batch of one tenant's answers: one signature, as one tree of all was). Used
/// only on its writer's thread, which drafts a batch's receipts before the batch commits and
/// advances the chains once it committed: a head is stored in its batch's transaction, so each
/// chain holds exactly the committed heads.
public final class ReceiptIssuer: @unchecked Sendable {
    // @unchecked: `tips` is read and written only on the writer's thread (resume, issue, committed).
    /// The instance whose chain this extends.
    public let instance: String
    /// The keys whose current one signs the heads.
    public let keys: SigningKeys
    private let clock: any Clock
    private var tips: [ReceiptChain: ChainTip] = [:]

    public init(instance: String, keys: SigningKeys, clock: any Clock) {
        self.instance = instance
        self.keys = keys
        self.clock = clock
    }

    /// Continues each chain after its last stored head (`heads`: the instance's last head of each
    /// chain; a chain not among them starts at 0).
    public func resume(after heads: [SignedHead]) {
        tips = [:]
        for head in heads where head.head.instance == instance {
            if let known = tips[head.head.chain], known.sequence >= head.head.sequence { continue }
            tips[head.head.chain] = ChainTip(head)
        }
    }

    /// Where the next head of `tenant` and `environment`'s chain stands.
    public func nextPlace(tenant: String?, environment: String?) -> HeadPlace {
        let chain = ReceiptChain(instance: instance, tenant: tenant, environment: environment)
        return HeadPlace(chain: chain, sequence: tips[chain].map { $0.sequence + 1 } ?? 0)
    }

    /// The receipts of a batch of `tenant` and `environment`'s answers, whose leaf hashes are
    /// `leafHashes`, in order; the chain does not move until `committed`. Nil when there is no
    /// leaf or the signature fails. Without a tenant: a head of no tenant, as heads were before
    /// migration 0024 (tests and benchmarks).
    public func issue(leafHashes: [[UInt8]], tenant: String? = nil, environment: String? = nil) -> ReceiptBatch? {
        guard let tree = MerkleTree(leafHashes: leafHashes) else { return nil }
        let tip = tips[ReceiptChain(instance: instance, tenant: tenant, environment: environment)]
        // A wall clock stepped back never makes a head older than the one it follows.
        let time = max(clock.now(), tip?.time ?? .min)
        let head = ReceiptHead(
            instance: instance, tenant: tenant, environment: environment, sequence: tip.map { $0.sequence + 1 } ?? 0,
            size: tree.size, root: tree.root, previous: tip?.hash, time: time)
        guard let jws = keys.sign(head.payload) else { return nil }
        var leaves = [UInt8]()
        leaves.reserveCapacity(leafHashes.count * MerkleTree.hashLength)
        for leaf in leafHashes { leaves += leaf }
        return ReceiptBatch(tree: tree, head: SignedHead(head: head, jws: jws), leaves: leaves)
    }

    /// Advances the batch's chain past it, once its head is durable.
    public func committed(_ batch: ReceiptBatch) { tips[batch.head.head.chain] = ChainTip(batch.head) }

    /// An issuer that signs with a key made now and never published: for benchmarks and tests,
    /// which verify with `keys` themselves. Its instance is named at random unless given.
    public static func withEphemeralKey(
        instance: String = "ephemeral-" + Hex.encode(SecureRandom.bytes(4)),
        clock: any Clock = SystemClock()
    ) -> ReceiptIssuer {
        let key = SigningKey(key: Ed25519SigningKey.generate().key, createdAt: 0, activatesAt: 0)
        do {
            return ReceiptIssuer(
                instance: instance, keys: SigningKeys(try SigningKeySet(keys: [key], now: clock.now()), clock: clock),
                clock: clock)
        } catch {
            preconditionFailure("a set of one key that is not retired always signs")
        }
    }
}

extension SignedHead {
    /// A stored head read back from its compact serialization (the payload decoded; the
    /// signature is not checked here); nil when it is not a JWS with a head's payload.
    public init?(jws: String) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]), let head = ReceiptHead(payload: payload) else {
            return nil
        }
        self.init(head: head, jws: jws)
    }
}

/// A head as the log keeps it: signed, with its batch's leaf hashes when they were asked for.
public struct LoggedHead: Sendable, Equatable {
    public let signed: SignedHead
    /// The leaf hashes, 32 bytes each in leaf order; empty when not read.
    public let leaves: [UInt8]

    public init(signed: SignedHead, leaves: [UInt8]) {
        self.signed = signed
        self.leaves = leaves
    }

    /// The receipt of the answer whose leaf hash is `leafHash`, rebuilt from the stored leaves:
    /// the one its first answer got (a tree and its paths follow from its leaves alone). Nil when
    /// the leaves do not hold it, or do not give the signed root.
    public func receipt(ofLeaf leafHash: [UInt8]) -> Receipt? {
        let length = MerkleTree.hashLength
        guard leafHash.count == length, leaves.count % length == 0 else { return nil }
        let hashes = stride(from: 0, to: leaves.count, by: length).map { Array(leaves[$0..<$0 + length]) }
        guard let index = hashes.firstIndex(of: leafHash), let tree = MerkleTree(leafHashes: hashes),
            tree.root == signed.head.root, tree.size == signed.head.size
        else { return nil }
        return Receipt(head: signed, index: index, tree: tree)
    }
}

/// The stored heads of every chain (`GET /v1/receipts/heads`, `insightctl receipts`).
public protocol ReceiptLog: Sendable {
    /// The heads of `chain` from sequence `from` on, in order, at most `limit`; each with its
    /// leaves when `withLeaves`.
    func heads(of chain: ReceiptChain, from: Int64, limit: Int, withLeaves: Bool) throws -> [LoggedHead]
    /// The latest head of each chain, ordered by instance, tenant and environment (the chains of
    /// no tenant first); of `tenant` and `environment`'s chains only, when given.
    func latestHeads(tenant: String?, environment: String?) throws -> [SignedHead]
}

extension ReceiptLog {
    /// The latest head of every chain.
    public func latestHeads() throws -> [SignedHead] { try latestHeads(tenant: nil, environment: nil) }
}
