import Crypto
import Synchronization

/// The hash keys in use: the active one hashes everything new; the previous ones (newest
/// first) are still tried by lookups, so velocity and opt-outs keep matching across a
/// rotation until the operator retires the old key.
public struct HashKeyring: Sendable {
    /// The key that hashes everything stored from now on.
    public let active: SubjectHasher
    /// Older keys still honoured by lookups, newest first.
    public let previous: [SubjectHasher]
    /// The key bytes, oldest first (kept to derive each tenant's keys).
    private let keys: [[UInt8]]

    /// A keyring of `keys`, oldest first; the last is active.
    public init(keys: [[UInt8]]) throws(HashKeyError) {
        guard let last = keys.last else { throw HashKeyError.empty }
        active = try SubjectHasher(key: last)
        var older: [SubjectHasher] = []
        for key in keys.dropLast().reversed() { older.append(try SubjectHasher(key: key)) }
        previous = older
        all = [active] + older
        self.keys = keys
    }

    /// A key for `purpose` other than hashing identifiers (a transparency cursor's seal),
    /// HMAC-SHA256(active key, "insightd " || purpose): no further secret to keep, and every
    /// instance reading the same key file derives the same one. A rotation changes it.
    public func derivedKey(for purpose: String) -> [UInt8] {
        HMACSHA256.authenticationCode(for: Array("insightd \(purpose)".utf8), key: keys[keys.count - 1])
    }

    /// Every key, active first. Kept rather than joined on each use: each evaluation asks for
    /// it five times (three identifiers, a retry's key and digest).
    public let all: [SubjectHasher]

    /// The hashes of `identifier` under every key, active first: what a lookup must match.
    public func lookupHashes(_ identifier: String, kind: IdentifierKind) -> [[UInt8]] {
        all.map { $0.hash(identifier, kind: kind) }
    }

    /// The keyring `tenant` hashes with. Tenant `default` uses these keys as they are (the
    /// hashes stored before tenants existed stay valid); every other tenant uses keys derived
    /// from them, HMAC-SHA256(key, "insightd tenant key" || 0x00 || name), so one person's
    /// hashes differ between tenants and no reader of the store can link them. Derived keys
    /// follow rotations: the n-th key of a tenant comes from the n-th key of the keyring.
    public func forTenant(_ tenant: String) -> HashKeyring {
        guard tenant != Tenant.defaultName else { return self }
        let label = Array("insightd tenant key\u{0}".utf8) + Array(tenant.utf8)
        // Derived keys are 32 bytes, the minimum length, so this cannot throw.
        return try! HashKeyring(keys: keys.map { HMACSHA256.authenticationCode(for: label, key: $0) })
    }
}

/// The keyring in use, replaceable while the daemon runs (after `insightctl hash-keys rotate`),
/// with each tenant's derived keyring made once and kept until the next replacement.
public final class HashKeys: Sendable {
    private struct State {
        var keyring: HashKeyring
        var tenants: [String: HashKeyring] = [:]
    }

    private let state: Mutex<State>

    public init(_ keyring: HashKeyring) { state = Mutex(State(keyring: keyring)) }

    /// The keyring now (tenant `default`'s).
    public var current: HashKeyring { state.withLock { $0.keyring } }

    /// The keyring `tenant` hashes with now.
    public func current(tenant: String) -> HashKeyring {
        state.withLock { state in
            guard tenant != Tenant.defaultName else { return state.keyring }
            if let derived = state.tenants[tenant] { return derived }
            let derived = state.keyring.forTenant(tenant)
            state.tenants[tenant] = derived
            return derived
        }
    }

    /// Swaps in a new keyring.
    public func replace(_ new: HashKeyring) { state.withLock { $0 = State(keyring: new) } }
}
