import InsightDomain

/// A person's choice to switch insights off, with a cooldown (docs/api.md "Subject authorization").
/// A choice belongs to the caller's tenant and environment: every caller of the tenant sees and may
/// change it, no other tenant can.
public struct AuthorizationService: Sendable {
    let store: any AuthorizationStore
    let denials: DenialIndex
    let hashKeys: HashKeys
    let clock: any Clock
    let metrics: ServiceMetrics
    /// How long a denial waits before it takes effect (a coached person may be told to deny).
    let cooldown: Milliseconds

    public init(
        store: any AuthorizationStore, denials: DenialIndex, hashKeys: HashKeys, clock: any Clock,
        metrics: ServiceMetrics, cooldown: Milliseconds
    ) {
        self.store = store
        self.denials = denials
        self.hashKeys = hashKeys
        self.clock = clock
        self.metrics = metrics
        self.cooldown = cooldown
    }

    /// A choice and the time it was read or made at (its status depends on it).
    public struct State: Sendable, Equatable {
        /// Nil: the person never chose (insights are on).
        public var record: AuthorizationRecord?
        public var now: Milliseconds
    }

    /// Records `request` for the subject; a denial the tenant has no room for is refused.
    public func apply(
        _ request: AuthorizationRequest, kind: AuthorizableKind, identifier: String, by caller: Caller,
        resume: @escaping Resume, completion: @escaping Completion<State>
    ) throws(Rejection) {
        let subject = hashes(kind, identifier, of: caller)
        if request == .denied, !denials.hasRoom(for: subject) {
            metrics.throttled(.denialCapacity)
            throw .denialCapacity(capacity: denials.capacity)
        }
        let now = clock.now(), denials = self.denials
        store.apply(request, for: subject, now: now, cooldown: cooldown) { result in
            resume {
                switch result {
                case .success(let record):
                    denials.update(subject, record: record)
                    completion(.success(State(record: record, now: now)))
                case .failure(let failure):
                    completion(.failure(.store(failure)))
                }
            }
        }
    }

    /// The subject's current choice.
    public func query(kind: AuthorizableKind, identifier: String, by caller: Caller) throws(Rejection) -> State {
        let subject = hashes(kind, identifier, of: caller)
        do { return State(record: try store.record(for: subject), now: clock.now()) } catch {
            throw .unreadable(.authorizations)
        }
    }

    /// The identifier hashed under every key of the caller's tenant (the raw value goes no further).
    private func hashes(_ kind: AuthorizableKind, _ identifier: String, of caller: Caller) -> SubjectHashes {
        let keyring = hashKeys.current(tenant: caller.tenant)
        return SubjectHashes(
            tenant: caller.tenant, environment: caller.environment, kind: kind,
            hashes: keyring.lookupHashes(identifier, kind: kind.identifierKind),
            activeKeyId: keyring.active.keyId)
    }
}
