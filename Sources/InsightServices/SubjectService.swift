import Dispatch
import InsightDomain

/// The person's view (docs/privacy.md "Access and erasure requests"): which evaluations carried a
/// subject, and erasure of the subject everywhere insightd keeps it. The identifier is hashed under
/// every key of the caller's tenant here, as evaluations and opt-outs do, and goes no further.
public struct SubjectService: Sendable {
    let history: any SubjectHistory
    let erasure: any SubjectErasure
    let authorization: AuthorizationService
    let denials: DenialIndex
    let velocity: any VelocityState
    let hashKeys: HashKeys
    let metrics: ServiceMetrics
    let audit: @Sendable (ErasureAudit) -> Void
    /// How long after an erasure velocity is erased a second time (see `erase`).
    let velocitySettle: DispatchTimeInterval

    public init(
        history: any SubjectHistory, erasure: any SubjectErasure, authorization: AuthorizationService,
        denials: DenialIndex, velocity: any VelocityState, hashKeys: HashKeys, metrics: ServiceMetrics,
        velocitySettle: DispatchTimeInterval = .seconds(2), audit: @escaping @Sendable (ErasureAudit) -> Void
    ) {
        self.history = history
        self.erasure = erasure
        self.authorization = authorization
        self.denials = denials
        self.velocity = velocity
        self.hashKeys = hashKeys
        self.metrics = metrics
        self.velocitySettle = velocitySettle
        self.audit = audit
    }

    /// The optional tenant a request names: a guard against a key of the wrong tenant. An
    /// operator who names the tenant is told when the key belongs to another one, before
    /// anything is read or erased.
    public func confirmTenant(_ named: String?, of caller: Caller) throws(Rejection) {
        if let named, named != caller.tenant {
            throw .invalid(field: "tenant", detail: "is not the tenant of this credential, which acts only in its own tenant")
        }
    }

    /// One page of a subject's evaluations and its authorization status.
    public struct Transparency: Sendable, Equatable {
        public var page: SubjectHistoryPage
        /// The subject's choice (accounts and devices); nil for a counterparty, which cannot choose.
        public var authorization: AuthorizationService.State?
    }

    /// `cursor` as the opaque text handed to `caller` (`TransparencyCursor`).
    public func cursorText(_ cursor: SubjectHistoryCursor, for caller: Caller) -> String {
        TransparencyCursor.seal(
            cursor, tenant: caller.tenant, environment: caller.environment,
            key: hashKeys.current.derivedKey(for: TransparencyCursor.keyPurpose))
    }

    /// The position a cursor handed to `caller` names; refuses one this daemon did not hand
    /// to the caller's tenant and environment (forged, altered, another tenant's, or from before
    /// a hash key rotation).
    public func cursor(_ text: String, for caller: Caller) throws(Rejection) -> SubjectHistoryCursor {
        guard
            let cursor = TransparencyCursor.open(
                text, tenant: caller.tenant, environment: caller.environment,
                key: hashKeys.current.derivedKey(for: TransparencyCursor.keyPurpose))
        else {
            throw .invalid(field: "cursor", detail: "is not a cursor this API handed out to this tenant and environment")
        }
        return cursor
    }

    /// The evaluations of `caller`'s tenant and environment that carried the subject, newest
    /// first, `limit` at most, after `cursor`.
    public func transparency(
        kind: IdentifierKind, identifier: String, limit: Int, after cursor: SubjectHistoryCursor?,
        by caller: Caller
    ) throws(Rejection) -> Transparency {
        let query: SubjectHistoryQuery
        do {
            query = try SubjectHistoryQuery(
                kind: kind, hashes: hashKeys.current(tenant: caller.tenant).lookupHashes(identifier, kind: kind),
                tenant: caller.tenant, environment: caller.environment, limit: limit, after: cursor)
        } catch {
            throw .invalid(
                field: "limit", detail: "must be from \(SubjectHistoryQuery.limits.lowerBound) to \(SubjectHistoryQuery.limits.upperBound)")
        }
        let page: SubjectHistoryPage
        do { page = try history.subjectHistory(query) } catch { throw .unreadable(.evaluations) }
        guard let choosing = AuthorizableKind(kind) else { return Transparency(page: page, authorization: nil) }
        return Transparency(page: page, authorization: try authorization.query(kind: choosing, identifier: identifier, by: caller))
    }

    /// What an erasure unlinked, and under how many hash keys it looked.
    public struct Erasure: Sendable, Equatable {
        public var report: SubjectErasureReport
        /// The keys of the tenant's keyring each identifier was hashed under.
        public var hashKeys: Int
    }

    /// Unlinks the subject named by `identifiers` (one or more kinds) from everything the admin's
    /// tenant keeps in the admin's environment (`Caller.administers`): the store (evaluations lose the hashes, opt-outs are deleted; see
    /// `SubjectErasure`), the opt-outs held in memory and velocity. Idempotent. Completes after
    /// the store has erased and velocity has forgotten; a failure of either is a `.store`
    /// rejection, and erasing again finishes the work.
    ///
    /// An evaluation committed just before the erasure records into velocity after its commit,
    /// on its own event loop (another instance's, with several), which can come after the
    /// erasure's velocity step; velocity is therefore erased once more `velocitySettle` later.
    public func erase(
        _ identifiers: [IdentifierKind: String], by admin: Caller, resume: @escaping Resume,
        completion: @escaping Completion<Erasure>
    ) {
        let keyring = hashKeys.current(tenant: admin.tenant)
        func hashes(_ kind: IdentifierKind) -> [[UInt8]] {
            identifiers[kind].map { keyring.lookupHashes($0, kind: kind) } ?? []
        }
        let subject = ErasedSubject(
            tenant: admin.tenant, environment: admin.environment, account: hashes(.account), device: hashes(.device),
            counterparty: hashes(.counterparty))
        let kinds = IdentifierKind.allCases.filter { identifiers[$0] != nil }
        let keyCount = keyring.all.count
        let (denials, velocity, metrics, audit, settle) = (self.denials, self.velocity, self.metrics, self.audit, velocitySettle)
        erasure.erase(subject) { result in
            resume {
                switch result {
                case .failure(let failure):
                    completion(.failure(.store(failure)))
                case .success(let report):
                    denials.forget(subject)
                    do { try velocity.erase(subject) } catch {
                        completion(.failure(.store(error as? StoreFailure ?? .unavailable("velocity state: \(error)"))))
                        return
                    }
                    DispatchQueue.global().asyncAfter(deadline: .now() + settle) { try? velocity.erase(subject) }
                    metrics.erased(report, tenant: subject.tenant)
                    audit(
                        ErasureAudit(
                            tenant: subject.tenant, environment: admin.environment, adminCallerId: admin.callerId, kinds: kinds,
                            report: report, hashKeys: keyCount))
                    completion(.success(Erasure(report: report, hashKeys: keyCount)))
                }
            }
        }
    }
}

/// The audit record of one erasure: who erased which kinds in which tenant and environment, and
/// what it unlinked; never the identifier or its hashes.
public struct ErasureAudit: Sendable, Equatable {
    public var tenant: String
    /// The admin key's environment, the only one erased.
    public var environment: Environment
    public var adminCallerId: String
    public var kinds: [IdentifierKind]
    public var report: SubjectErasureReport
    public var hashKeys: Int

    public init(
        tenant: String, environment: Environment, adminCallerId: String, kinds: [IdentifierKind],
        report: SubjectErasureReport, hashKeys: Int
    ) {
        self.tenant = tenant
        self.environment = environment
        self.adminCallerId = adminCallerId
        self.kinds = kinds
        self.report = report
        self.hashKeys = hashKeys
    }
}

extension AuthorizableKind {
    /// The kind a person can choose for, if `kind` is one.
    init?(_ kind: IdentifierKind) {
        switch kind {
        case .account: self = .account
        case .device: self = .device
        case .counterparty: return nil
        }
    }
}
