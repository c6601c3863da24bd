import Synchronization

/// Whether insights may be evaluated for a subject (PRODUCT.md §5).
public enum AuthorizationStatus: String, Sendable, CaseIterable {
    /// Insights are on (the default).
    case authorized
    /// The person asked to switch insights off; evaluations continue until `effectiveAt`,
    /// because a coached person may have been told to switch them off.
    case denialPending
    /// Insights are off: evaluations answer `denied`.
    case denied
}

/// What a person asked for.
public enum AuthorizationRequest: String, Sendable, CaseIterable {
    case denied, authorized
}

/// The subject kinds a person can switch insights off for.
public enum AuthorizableKind: String, Sendable, CaseIterable {
    case account, device

    public var identifierKind: IdentifierKind { self == .account ? .account : .device }
}

/// A stored choice.
public struct AuthorizationRecord: Sendable, Equatable {
    public var request: AuthorizationRequest
    public var requestedAt: Milliseconds
    public var effectiveAt: Milliseconds

    public init(request: AuthorizationRequest, requestedAt: Milliseconds, effectiveAt: Milliseconds) {
        self.request = request
        self.requestedAt = requestedAt
        self.effectiveAt = effectiveAt
    }

    /// The status at `now`.
    public func status(at now: Milliseconds) -> AuthorizationStatus {
        switch request {
        case .authorized: return .authorized
        case .denied: return now >= effectiveAt ? .denied : .denialPending
        }
    }
}

/// One subject's keyed hashes under every key of the keyring, active first.
public struct SubjectHashes: Sendable, Equatable {
    public var environment: Environment
    public var kind: AuthorizableKind
    public var hashes: [[UInt8]]
    public var activeKeyId: String

    public init(environment: Environment, kind: AuthorizableKind, hashes: [[UInt8]], activeKeyId: String) {
        self.environment = environment
        self.kind = kind
        self.hashes = hashes
        self.activeKeyId = activeKeyId
    }
}

/// Durable subject authorizations.
public protocol AuthorizationStore: Sendable {
    /// Applies a person's request: a denial keeps an earlier denial's effective time (asking
    /// again does not restart the cooldown); an authorization replaces any denial at once.
    /// The record is kept under the active key's hash; records under older keys are folded in.
    func apply(_ request: AuthorizationRequest, for subject: SubjectHashes, now: Milliseconds,
               cooldown: Milliseconds,
               completion: @escaping @Sendable (Result<AuthorizationRecord, StoreFailure>) -> Void)
    /// The subject's stored choice under any of its hashes (a denial wins), or nil.
    func record(for subject: SubjectHashes) throws -> AuthorizationRecord?
    /// Every stored denial (for the in-memory index at start).
    func denials() throws -> [(environment: Environment, kind: AuthorizableKind, hash: [UInt8], effectiveAt: Milliseconds)]
}

/// Denials in memory, so an evaluation checks its subject without a database read.
public final class DenialIndex: Sendable {
    private struct Key: Hashable {
        let environment: Environment
        let kind: AuthorizableKind
        let hash: [UInt8]
    }

    private let entries = Mutex<[Key: Milliseconds]>([:])

    public init() {}

    /// Replaces the whole index (at start).
    public func load(_ denials: [(environment: Environment, kind: AuthorizableKind, hash: [UInt8], effectiveAt: Milliseconds)]) {
        var all: [Key: Milliseconds] = [:]
        for d in denials { all[Key(environment: d.environment, kind: d.kind, hash: d.hash)] = d.effectiveAt }
        entries.withLock { $0 = all }
    }

    /// Records a subject's new state (after it was committed).
    public func update(_ subject: SubjectHashes, record: AuthorizationRecord) {
        entries.withLock { all in
            for hash in subject.hashes { all[Key(environment: subject.environment, kind: subject.kind, hash: hash)] = nil }
            if record.request == .denied, let active = subject.hashes.first {
                all[Key(environment: subject.environment, kind: subject.kind, hash: active)] = record.effectiveAt
            }
        }
    }

    /// True when any of the subject's hashes has a denial in effect at `now`.
    public func isDenied(_ environment: Environment, _ kind: AuthorizableKind, hashes: [[UInt8]], now: Milliseconds) -> Bool {
        entries.withLock { all in
            hashes.contains { hash in (all[Key(environment: environment, kind: kind, hash: hash)]).map { now >= $0 } ?? false }
        }
    }
}
