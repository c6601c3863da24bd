import Crypto
import Synchronization

/// One key that signs the heads of answers' receipts (docs/operations.md "Receipts"), with its life: created, signing from
/// `activatesAt` (a rotation may publish a key before it signs, so that every instance and
/// every cache lists it first), and, once retired, published until `publishedUntil` so that
/// answers it signed stay verifiable.
public struct SigningKey: Sendable {
    public let signer: JWSSigner
    /// The public key (32 bytes): a JWK's `x`.
    public let publicKey: [UInt8]
    public let createdAt: Milliseconds
    public let activatesAt: Milliseconds
    /// When it was retired; nil while it is not.
    public let retiredAt: Milliseconds?
    /// When it stops being published (a retired key only).
    public let publishedUntil: Milliseconds?

    /// The RFC 7638 thumbprint of the public key: the `kid` of the JWS header and the JWKS.
    public var keyId: String { signer.keyId }

    public init(
        key: Ed25519SigningKey, createdAt: Milliseconds, activatesAt: Milliseconds,
        retiredAt: Milliseconds? = nil, publishedUntil: Milliseconds? = nil
    ) {
        signer = JWSSigner(key: key, keyId: Ed25519JWK.thumbprint(publicKey: key.publicKey))
        publicKey = key.publicKey
        self.createdAt = createdAt
        self.activatesAt = activatesAt
        self.retiredAt = retiredAt
        self.publishedUntil = publishedUntil
    }

    /// Whether verifiers can find the key in the JWKS at `now`.
    public func isPublished(at now: Milliseconds) -> Bool { publishedUntil.map { now < $0 } ?? true }
}

/// Where a key stands at some moment.
public enum SigningKeyStatus: String, Sendable {
    /// Published; signs from its `activatesAt`, after the current key.
    case next
    /// Signs every head now.
    case current
    /// Published, no longer signing (a newer key took over), not retired.
    case previous
    /// Published until its `publishedUntil`, never signing again.
    case retired
    /// Retired and past its publication: gone from the JWKS (its file may be deleted).
    case expired
}

/// The signing keys of the daemon, oldest first. The current key at a moment is the newest
/// key that is not retired and whose activation has come.
public struct SigningKeySet: Sendable {
    public let keys: [SigningKey]

    /// A set of `keys`; throws unless one of them is not retired (then some key always signs).
    public init(keys: [SigningKey], now: Milliseconds) throws(SigningKeyError) {
        self.keys = keys.sorted { ($0.createdAt, $0.keyId) < ($1.createdAt, $1.keyId) }
        guard current(at: now) != nil else {
            throw keys.isEmpty ? .noKey : .noCurrentKey
        }
    }

    /// The key that signs at `now`: the newest key not retired whose activation has come, or,
    /// when the wall clock reads earlier than every activation (stepped back after a rotation),
    /// the first key to activate — answers stay signed whatever the clock says.
    public func current(at now: Milliseconds) -> SigningKey? {
        keys.last { $0.retiredAt == nil && $0.activatesAt <= now }
            ?? keys.filter { $0.retiredAt == nil }.min { $0.activatesAt < $1.activatesAt }
    }

    /// The keys of the JWKS at `now`, oldest first.
    public func published(at now: Milliseconds) -> [SigningKey] {
        keys.filter { $0.isPublished(at: now) }
    }

    public func status(of key: SigningKey, at now: Milliseconds) -> SigningKeyStatus {
        if key.retiredAt != nil { return key.isPublished(at: now) ? .retired : .expired }
        if current(at: now)?.keyId == key.keyId { return .current }
        return key.activatesAt > now ? .next : .previous
    }
}

/// Why a set of signing keys cannot be used.
public enum SigningKeyError: Error, Equatable, CustomStringConvertible {
    case noKey
    case noCurrentKey

    public var description: String {
        switch self {
        case .noKey: return "holds no signing key"
        case .noCurrentKey: return "holds no key that can sign: every key is retired"
        }
    }
}

/// The signing keys in use, replaceable while the daemon runs (after `insightctl signing-keys
/// rotate` or `retire`).
public final class SigningKeys: Sendable {
    private let state: Mutex<SigningKeySet>
    private let clock: any Clock

    public init(_ set: SigningKeySet, clock: any Clock) {
        state = Mutex(set)
        self.clock = clock
    }

    public var set: SigningKeySet { state.withLock { $0 } }

    public func replace(_ set: SigningKeySet) { state.withLock { $0 = set } }

    /// The compact JWS of `payload` under the current key; nil only if the signature fails (a
    /// set always has a key that signs: `SigningKeySet.init` checks it).
    public func sign(_ payload: [UInt8]) -> String? {
        let now = clock.now()
        guard let signer = state.withLock({ $0.current(at: now)?.signer }) else { return nil }
        return signer.compactSerialization(of: payload)
    }

    /// The keys of the JWKS now.
    public func published() -> [SigningKey] {
        let now = clock.now()
        return state.withLock { $0.published(at: now) }
    }
}
