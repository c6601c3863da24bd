import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `PUT /v1/authorization` and `POST /v1/authorization/query` (role `evaluate`): a person's
/// choice to switch insights off, with a cooldown, and its current state. Identifiers travel
/// only in bodies, never in URLs. A choice belongs to the caller's tenant and environment: every
/// caller of the tenant sees and may change it, no other tenant can.
extension InsightAPIHandler {
    /// Reads `{"subject": {"account": …} | {"device": …}}` and hashes it under every key of the
    /// caller's tenant.
    func authorizationSubject(_ root: ObjectReader, of caller: Caller) throws(Problem) -> SubjectHashes {
        guard let subject = try root.object("subject", allowed: ["account", "device"]) else {
            throw Problem.invalid("subject", "is required")
        }
        let account = try subject.string("account", maxLength: EvaluationRequest.maxIdentifierLength)
        let device = try subject.string("device", maxLength: EvaluationRequest.maxIdentifierLength)
        let kind: AuthorizableKind, identifier: String
        switch (account, device) {
        case (let a?, nil): (kind, identifier) = (.account, a)
        case (nil, let d?): (kind, identifier) = (.device, d)
        default: throw Problem.invalid("subject", "must name exactly one of account or device")
        }
        let keyring = dependencies.hashKeys.current(tenant: caller.tenant)
        return SubjectHashes(tenant: caller.tenant, environment: caller.environment, kind: kind,
                             hashes: keyring.lookupHashes(identifier, kind: kind.identifierKind),
                             activeKeyId: keyring.active.keyId)
    }

    /// `PUT /v1/authorization`: costs a token of the caller's quota, like every write; a denial
    /// the tenant has no room for (`DenialIndex.capacity`) is refused.
    func putAuthorization(_ exchange: Exchange) throws {
        let caller = try authenticate(exchange)
        _ = try admit(caller.caller)
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["subject", "status"])
        let request = try root.enumeration("status", AuthorizationRequest.self, required: true)!
        let subject = try authorizationSubject(root, of: caller.caller)
        if request == .denied, !dependencies.denials.hasRoom(for: subject) {
            dependencies.metrics.throttled(.denialCapacity)
            throw Throttling.denialCapacityProblem(capacity: dependencies.denials.capacity)
        }
        let now = dependencies.clock.now(), denials = dependencies.denials, answered = exchange
        dependencies.authorizations.apply(request, for: subject, now: now,
                                          cooldown: dependencies.configuration.authorizationCooldownMilliseconds, completion: answered.onLoop { result in
            switch result {
            case .success(let record):
                denials.update(subject, record: record)
                answered.send(Self.json(200, Self.render(record, now: now)))
            case .failure(let failure):
                answered.fail(Problem.from(failure))
            }
        })
    }

    /// `POST /v1/authorization/query`
    func queryAuthorization(_ exchange: Exchange) throws {
        let caller = try authenticate(exchange)
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["subject"])
        let subject = try authorizationSubject(root, of: caller.caller)
        let record: AuthorizationRecord?
        do { record = try dependencies.authorizations.record(for: subject) } catch {
            throw Problem(503, .serverError, "Authorizations cannot be read right now; retry.")
        }
        let now = dependencies.clock.now()
        exchange.send(Self.json(200, Self.render(record ?? AuthorizationRecord(request: .authorized, requestedAt: 0, effectiveAt: 0),
                                                 now: now, stored: record != nil)))
    }

    static func render(_ record: AuthorizationRecord, now: Milliseconds, stored: Bool = true) -> JSONValue {
        var object = JSONObject()
        object.append("status", .string(record.status(at: now).rawValue))
        object.append("requestedAt", stored ? .string(Timestamp.format(record.requestedAt)) : .null)
        object.append("effectiveAt", stored ? .string(Timestamp.format(record.effectiveAt)) : .null)
        return .object(object)
    }
}
