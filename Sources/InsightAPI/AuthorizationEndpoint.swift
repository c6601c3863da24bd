import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `PUT /v1/authorization` and `POST /v1/authorization/query` (role `evaluate`): a person's
/// choice to switch insights off (`AuthorizationService`). Identifiers travel only in bodies,
/// never in URLs.
extension InsightAPIHandler {
    /// Reads `{"subject": {"account": …} | {"device": …}}`.
    static func authorizationSubject(_ root: ObjectReader) throws(Problem) -> (AuthorizableKind, String) {
        guard let subject = try root.object("subject", allowed: ["account", "device"]) else {
            throw Problem.invalid("subject", "is required")
        }
        let account = try subject.string("account", maxLength: EvaluationRequest.maxIdentifierLength)
        let device = try subject.string("device", maxLength: EvaluationRequest.maxIdentifierLength)
        switch (account, device) {
        case (let a?, nil): return (.account, a)
        case (nil, let d?): return (.device, d)
        default: throw Problem.invalid("subject", "must name exactly one of account or device")
        }
    }

    /// `PUT /v1/authorization`
    func putAuthorization(_ exchange: Exchange) throws {
        let caller = try exchange.authenticated()
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["subject", "status"])
        let request = try root.enumeration("status", AuthorizationRequest.self, required: true)!
        let (kind, identifier) = try Self.authorizationSubject(root)
        let answered = exchange
        try useCases.authorization.apply(
            request, kind: kind, identifier: identifier, by: caller,
            resume: exchange.resume
        ) { result in
            answered.complete(result) { Self.json(200, Self.render($0)) }
        }
    }

    /// `POST /v1/authorization/query`
    func queryAuthorization(_ exchange: Exchange) throws {
        let caller = try exchange.authenticated()
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["subject"])
        let (kind, identifier) = try Self.authorizationSubject(root)
        exchange.send(
            Self.json(
                200,
                Self.render(
                    try useCases.authorization.query(
                        kind: kind, identifier: identifier,
                        by: caller))))
    }

    /// A choice at the time it was read; never chosen is `authorized` with no dates.
    static func render(_ state: AuthorizationService.State) -> JSONValue {
        var object = JSONObject()
        let record = state.record ?? AuthorizationRecord(request: .authorized, requestedAt: 0, effectiveAt: 0)
        object.append("status", .string(record.status(at: state.now).rawValue))
        object.append("requestedAt", state.record != nil ? .string(Timestamp.format(record.requestedAt)) : .null)
        object.append("effectiveAt", state.record != nil ? .string(Timestamp.format(record.effectiveAt)) : .null)
        return .object(object)
    }
}
