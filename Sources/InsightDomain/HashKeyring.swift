import Synchronization

/// The hash keys in use: the active one hashes everything new; the previous ones (newest
/// first) are still tried by lookups, so velocity and opt-outs keep matching across a
/// rotation until the operator retires the old key.
public struct HashKeyring: Sendable {
    /// The key that hashes everything stored from now on.
    public let active: SubjectHasher
    /// Older keys still honoured by lookups, newest first.
    public let previous: [SubjectHasher]

    /// A keyring of `keys`, oldest first; the last is active.
    public init(keys: [[UInt8]]) throws(HashKeyError) {
        guard let last = keys.last else { throw HashKeyError.empty }
        active = try SubjectHasher(key: last)
        var older: [SubjectHasher] = []
        for key in keys.dropLast().reversed() { older.append(try SubjectHasher(key: key)) }
        previous = older
    }

    /// Every key, active first.
    public var all: [SubjectHasher] { [active] + previous }

    /// The hashes of `identifier` under every key, active first: what a lookup must match.
    public func lookupHashes(_ identifier: String, kind: IdentifierKind) -> [[UInt8]] {
        all.map { $0.hash(identifier, kind: kind) }
    }
}

/// The keyring in use, replaceable while the daemon runs (after `insightctl hash-keys rotate`).
public final class HashKeys: Sendable {
    private let keyring: Mutex<HashKeyring>

    public init(_ keyring: HashKeyring) { self.keyring = Mutex(keyring) }

    /// The keyring now.
    public var current: HashKeyring { keyring.withLock { $0 } }

    /// Swaps in a new keyring.
    public func replace(_ new: HashKeyring) { keyring.withLock { $0 = new } }
}
