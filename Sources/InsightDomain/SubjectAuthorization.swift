import Synchronization

/// Whether insights may be evaluated for a subject (docs/api.md, "Subject authorization").
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
    /// The last time the person asked for this state (a repeated denial renews it without
    /// restarting the cooldown); retention counts from it.
    public var renewedAt: Milliseconds

    public init(
        request: AuthorizationRequest, requestedAt: Milliseconds, effectiveAt: Milliseconds,
        renewedAt: Milliseconds? = nil
    ) {
        self.request = request
        self.requestedAt = requestedAt
        self.effectiveAt = effectiveAt
        self.renewedAt = renewedAt ?? requestedAt
    }

    /// The status at `now`.
    public func status(at now: Milliseconds) -> AuthorizationStatus {
        switch request {
        case .authorized: return .authorized
        case .denied: return now >= effectiveAt ? .denied : .denialPending
        }
    }

    /// The record a store keeps when a person asks for `request` at `now` over the stored choice
    /// `existing` (docs/api.md, "Subject authorization"): a denial over a denial keeps its
    /// request and effective time (asking again does not restart the cooldown, even once it has
    /// ended) and renews the choice, never moving `renewedAt` back; any other denial takes effect
    /// `cooldown` after `now`; an authorization takes effect at once.
    public static func applying(
        _ request: AuthorizationRequest, over existing: AuthorizationRecord?, now: Milliseconds,
        cooldown: Milliseconds
    ) -> AuthorizationRecord {
        switch request {
        case .denied:
            guard var renewed = existing, renewed.request == .denied else {
                return AuthorizationRecord(request: .denied, requestedAt: now, effectiveAt: now + cooldown)
            }
            renewed.renewedAt = max(renewed.renewedAt, now)
            return renewed
        case .authorized:
            return AuthorizationRecord(request: .authorized, requestedAt: now, effectiveAt: now)
        }
    }

    /// The subject's choice among the records stored under its hashes, in the keyring's order
    /// (the active key's first): a denial wins over an authorization, the last denial in that
    /// order, else the first authorization.
    public static func standing(among found: some Sequence<AuthorizationRecord>) -> AuthorizationRecord? {
        var standing: AuthorizationRecord?
        for record in found where standing == nil || record.request == .denied { standing = record }
        return standing
    }
}

/// One subject's keyed hashes under every key of its tenant's keyring, active first.
public struct SubjectHashes: Sendable, Equatable {
    public var tenant: String
    public var environment: Environment
    public var kind: AuthorizableKind
    public var hashes: [[UInt8]]
    public var activeKeyId: String

    public init(
        tenant: String = Tenant.defaultName, environment: Environment, kind: AuthorizableKind, hashes: [[UInt8]],
        activeKeyId: String
    ) {
        self.tenant = tenant
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
    func apply(
        _ request: AuthorizationRequest, for subject: SubjectHashes, now: Milliseconds,
        cooldown: Milliseconds,
        completion: @escaping @Sendable (Result<AuthorizationRecord, StoreFailure>) -> Void)
    /// The subject's stored choice under any of its hashes (a denial wins), or nil.
    func record(for subject: SubjectHashes) throws -> AuthorizationRecord?
    /// Every stored denial (for the in-memory index at start).
    func denials() throws -> [StoredDenial]
    /// Every stored choice, denied or authorized, asked for (or renewed) at or after `since`: what
    /// other instances changed, for an instance's in-memory index.
    func authorizations(renewedSince since: Milliseconds) throws -> [StoredAuthorization]
}

/// A subject's choice as the store holds it, under one of its hashes.
public struct StoredAuthorization: Sendable, Equatable {
    public var tenant: String
    public var environment: Environment
    public var kind: AuthorizableKind
    public var hash: [UInt8]
    public var request: AuthorizationRequest
    public var effectiveAt: Milliseconds
    public var renewedAt: Milliseconds

    public init(
        tenant: String, environment: Environment, kind: AuthorizableKind, hash: [UInt8],
        request: AuthorizationRequest = .denied, effectiveAt: Milliseconds, renewedAt: Milliseconds
    ) {
        self.tenant = tenant
        self.environment = environment
        self.kind = kind
        self.hash = hash
        self.request = request
        self.effectiveAt = effectiveAt
        self.renewedAt = renewedAt
    }
}

/// A denial as the store holds it (its `request` is `.denied`).
public typealias StoredDenial = StoredAuthorization

/// Denials in memory, so an evaluation checks its subject without a database read. Each tenant
/// and environment holds at most `capacity` (`hasRoom`), since every denial costs memory.
public final class DenialIndex: Sendable {
    private struct Key: Hashable {
        let tenant: String
        let environment: Environment
        let kind: AuthorizableKind
        let hash: [UInt8]
    }
    private struct Scope: Hashable {
        let tenant: String
        let environment: Environment
    }
    private struct Denial {
        var effectiveAt: Milliseconds
        var renewedAt: Milliseconds
    }
    private struct State {
        var entries: [Key: Denial] = [:]
        var counts: [Scope: Int] = [:]

        /// Sets or removes one denial, keeping its scope's count.
        mutating func set(_ key: Key, _ denial: Denial?) {
            let old: Denial? = if let denial { entries.updateValue(denial, forKey: key) } else { entries.removeValue(forKey: key) }
            let change = (denial == nil ? 0 : 1) - (old == nil ? 0 : 1)
            guard change != 0 else { return }
            counts[Scope(tenant: key.tenant, environment: key.environment), default: 0] += change
        }
    }

    private let state = Mutex(State())
    /// Denials one tenant and environment may hold.
    public let capacity: Int

    public init(capacity: Int = 1_000_000) { self.capacity = capacity }

    /// Replaces the whole index (at start).
    public func load(_ denials: [StoredDenial]) {
        var all = State()
        for d in denials where d.request == .denied {
            all.set(
                Key(tenant: d.tenant, environment: d.environment, kind: d.kind, hash: d.hash),
                Denial(effectiveAt: d.effectiveAt, renewedAt: d.renewedAt))
        }
        state.withLock { $0 = all }
    }

    /// Records a subject's new state (after it was committed).
    public func update(_ subject: SubjectHashes, record: AuthorizationRecord) {
        state.withLock { state in
            for hash in subject.hashes { state.set(Self.key(subject, hash), nil) }
            if record.request == .denied, let active = subject.hashes.first {
                state.set(Self.key(subject, active), Denial(effectiveAt: record.effectiveAt, renewedAt: record.renewedAt))
            }
        }
    }

    /// Applies choices another instance recorded (`AuthorizationStore.authorizations(renewedSince:)`):
    /// a denial is set, an authorization lifts the denial held under its hash.
    public func apply(_ changes: [StoredAuthorization]) {
        state.withLock { state in
            for change in changes {
                state.set(
                    Key(tenant: change.tenant, environment: change.environment, kind: change.kind, hash: change.hash),
                    change.request == .denied ? Denial(effectiveAt: change.effectiveAt, renewedAt: change.renewedAt) : nil)
            }
        }
    }

    /// Drops the erased subject's denials in its environments of its tenant (both, unless the
    /// erasure names one; after the store deleted them).
    public func forget(_ subject: ErasedSubject) {
        state.withLock { state in
            for kind in AuthorizableKind.allCases {
                for hash in subject.hashes(kind.identifierKind) {
                    for environment in subject.environments {
                        state.set(Key(tenant: subject.tenant, environment: environment, kind: kind, hash: hash), nil)
                    }
                }
            }
        }
    }

    /// True when any of the subject's hashes has a denial in effect at `now`.
    public func isDenied(
        _ tenant: String, _ environment: Environment, _ kind: AuthorizableKind, hashes: [[UInt8]],
        now: Milliseconds
    ) -> Bool {
        state.withLock { state in
            hashes.contains { hash in
                state.entries[Key(tenant: tenant, environment: environment, kind: kind, hash: hash)].map { now >= $0.effectiveAt } ?? false
            }
        }
    }

    /// Whether `subject` may be denied: it already is (a repeated denial adds nothing), or its
    /// tenant and environment hold fewer than `capacity` denials.
    public func hasRoom(for subject: SubjectHashes) -> Bool {
        state.withLock { state in
            subject.hashes.contains { state.entries[Self.key(subject, $0)] != nil }
                || state.counts[Scope(tenant: subject.tenant, environment: subject.environment), default: 0] < capacity
        }
    }

    /// Denials held per tenant and environment (those holding any).
    public func counts() -> [(tenant: String, environment: Environment, denials: Int)] {
        state.withLock { state in
            state.counts.filter { $0.value > 0 }.map { (tenant: $0.key.tenant, environment: $0.key.environment, denials: $0.value) }
        }
    }

    /// Drops the denials not renewed since `cutoff` (after retention deleted them from the store).
    public func purge(renewedBefore cutoff: Milliseconds) {
        state.withLock { state in
            for (key, denial) in state.entries where denial.renewedAt < cutoff { state.set(key, nil) }
        }
    }

    private static func key(_ subject: SubjectHashes, _ hash: [UInt8]) -> Key {
        Key(tenant: subject.tenant, environment: subject.environment, kind: subject.kind, hash: hash)
    }
}
