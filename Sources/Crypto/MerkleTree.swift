/// A Merkle tree over a list of leaves as RFC 9162 §2.1.1 defines it (Certificate Transparency):
/// a leaf's hash is `SHA-256(0x00 ‖ leaf)`, an interior node's `SHA-256(0x01 ‖ left ‖ right)`,
/// and a list of n > 1 leaves splits at the largest power of two below n.
///
/// The tree is kept level by level (each level's hashes in one array of 32-byte runs), pairing
/// neighbours and carrying an unpaired last node up unchanged; that yields exactly RFC 9162's
/// tree, and an audit path is read off the levels without hashing again.
public struct MerkleTree: Sendable {
    /// Bytes of a node's hash.
    public static let hashLength = 32

    /// `levels[0]` holds the leaf hashes, each next level the hashes of the level below paired
    /// (an unpaired last one carried up); the last level holds the root alone.
    private let levels: [[UInt8]]

    /// Leaves in the tree.
    public let size: Int

    /// The tree over `leafHashes` (each `leafHash(of:)` of a leaf, 32 bytes); nil when it is
    /// empty or a hash is not 32 bytes.
    public init?(leafHashes: [[UInt8]]) {
        guard !leafHashes.isEmpty, leafHashes.allSatisfy({ $0.count == Self.hashLength }) else { return nil }
        size = leafHashes.count
        var level = [UInt8]()
        level.reserveCapacity(size * Self.hashLength)
        for hash in leafHashes { level += hash }
        var levels = [level]
        var count = size
        while count > 1 {
            let parents = (count + 1) / 2
            var next = [UInt8](repeating: 0, count: parents * Self.hashLength)
            level.withUnsafeBytes { below in
                next.withUnsafeMutableBytes { above in
                    for i in 0..<count / 2 {
                        Self.nodeHash(
                            UnsafeRawBufferPointer(rebasing: below[2 * i * 32..<(2 * i + 2) * 32]),
                            into: UnsafeMutableRawBufferPointer(rebasing: above[i * 32..<(i + 1) * 32]))
                    }
                    if count % 2 == 1 {
                        UnsafeMutableRawBufferPointer(rebasing: above[(parents - 1) * 32..<parents * 32])
                            .copyMemory(from: UnsafeRawBufferPointer(rebasing: below[(count - 1) * 32..<count * 32]))
                    }
                }
            }
            levels.append(next)
            level = next
            count = parents
        }
        self.levels = levels
    }

    /// The tree's root hash (for one leaf, its leaf hash).
    public var root: [UInt8] { levels[levels.count - 1] }

    /// The audit path of the leaf at `index` (RFC 9162 §2.1.3.1): the hashes that, with the
    /// leaf's, give the root, the leaf's neighbour first; empty for a tree of one leaf.
    public func auditPath(for index: Int) -> [[UInt8]] {
        var path: [[UInt8]] = []
        visitAuditPath(for: index) { path.append(Array($0)) }
        return path
    }

    /// Hands each hash of the leaf's audit path to `visit`, in order, without copying it (an
    /// answer's header is written from them on every request).
    public func visitAuditPath(for index: Int, _ visit: (UnsafeRawBufferPointer) -> Void) {
        precondition(index >= 0 && index < size, "leaf index out of range")
        var i = index, count = size
        for level in levels.dropLast() {
            let sibling = i ^ 1
            // An unpaired last node has no neighbour at this level: it is carried up as it is.
            if sibling < count {
                level.withUnsafeBytes { visit(UnsafeRawBufferPointer(rebasing: $0[sibling * 32..<(sibling + 1) * 32])) }
            }
            i /= 2
            count = (count + 1) / 2
        }
    }

    /// `SHA-256(0x00 ‖ leaf)`.
    public static func leafHash(of leaf: [UInt8]) -> [UInt8] {
        var state = SHA256.State()
        withUnsafeBytes(of: UInt8(0)) { state.absorb($0) }
        leaf.withUnsafeBytes { state.absorb($0) }
        return state.finish()
    }

    /// `SHA-256(0x01 ‖ left ‖ right)`.
    public static func nodeHash(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: hashLength)
        (left + right).withUnsafeBytes { pair in out.withUnsafeMutableBytes { nodeHash(pair, into: $0) } }
        return out
    }

    /// Writes `SHA-256(0x01 ‖ pair)` into `out` (32 bytes).
    private static func nodeHash(_ pair: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        var state = SHA256.State()
        withUnsafeBytes(of: UInt8(1)) { state.absorb($0) }
        state.absorb(pair)
        state.finish(into: out.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// The root that the audit path `path` gives for the leaf hash `leafHash` at `index` of a
    /// tree of `size` leaves (RFC 9162 §2.1.3.2); nil when the path cannot belong to such a
    /// position (too short, too long, an index outside the tree, a hash not 32 bytes). A
    /// verifier compares the result with the signed root.
    public static func root(fromAuditPath path: [[UInt8]], leafHash: [UInt8], index: Int, size: Int) -> [UInt8]? {
        guard index >= 0, index < size, leafHash.count == hashLength else { return nil }
        var fn = index, sn = size - 1
        var r = leafHash
        for p in path {
            guard p.count == hashLength, sn != 0 else { return nil }
            if fn & 1 == 1 || fn == sn {
                r = nodeHash(p, r)
                // The right edge of an unbalanced tree: climb to where this node is a right child.
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                r = nodeHash(r, p)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 ? r : nil
    }
}
