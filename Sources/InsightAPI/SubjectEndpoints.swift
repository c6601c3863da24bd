import Crypto
import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `POST /v1/subjects/transparency` (role `evaluate`) and `POST /v1/subjects/erasure` (role
/// `admin`): the person's view (docs/api.md "The person's view", `SubjectService`). Identifiers
/// travel only in bodies, never in URLs, and are hashed before anything else happens to them.
extension InsightAPIHandler {
    /// `POST /v1/subjects/transparency`
    func subjectTransparency(_ exchange: Exchange) throws {
        let caller = try exchange.authenticated()
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["subject", "limit", "cursor", "tenant"])
        try useCases.subjects.confirmTenant(try root.string("tenant", maxLength: Tenant.maxNameLength), of: caller)
        let subject = try Self.subjectIdentifiers(root)
        guard subject.count == 1, let (kind, identifier) = subject.first.map({ ($0.key, $0.value) }) else {
            throw Problem.invalid("subject", "must name exactly one of account, device or counterparty")
        }
        let limit = Int(
            try root.integer("limit", in: Int64(SubjectHistoryQuery.limits.lowerBound)...Int64(SubjectHistoryQuery.limits.upperBound)) ?? 50
        )
        let cursor = try root.string("cursor", maxLength: 64).map { text throws(Rejection) in
            try useCases.subjects.cursor(text, for: caller)
        }
        let answer = try useCases.subjects.transparency(kind: kind, identifier: identifier, limit: limit, after: cursor, by: caller)
        exchange.send(Self.json(200, Self.render(answer, cursor: answer.page.next.map { useCases.subjects.cursorText($0, for: caller) })))
    }

    /// `POST /v1/subjects/erasure`
    func subjectErasure(_ exchange: Exchange) throws {
        let admin = try exchange.authenticated()
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["subject", "tenant"])
        try useCases.subjects.confirmTenant(try root.string("tenant", maxLength: Tenant.maxNameLength), of: admin)
        let identifiers = try Self.subjectIdentifiers(root)
        guard !identifiers.isEmpty else {
            throw Problem.invalid("subject", "must name at least one of account, device or counterparty")
        }
        let answered = exchange
        useCases.subjects.erase(identifiers, by: admin, resume: exchange.resume) { result in
            answered.complete(result) { erasure in
                Self.json(
                    200,
                    .object([
                        "tenant": .string(admin.tenant),
                        "evaluations": .number(Double(erasure.report.evaluations)),
                        "authorizations": .number(Double(erasure.report.authorizations)),
                        "trainingVectors": .number(Double(erasure.report.trainingVectors)),
                        "hashKeys": .number(Double(erasure.hashKeys))
                    ]))
            }
        }
    }

    /// Reads `{"subject": {"account": …, "device": …, "counterparty": …}}`: the kinds given.
    static func subjectIdentifiers(_ root: ObjectReader) throws(Problem) -> [IdentifierKind: String] {
        guard let subject = try root.object("subject", allowed: IdentifierKind.allCases.map(\.rawValue)) else {
            throw Problem.invalid("subject", "is required")
        }
        var identifiers: [IdentifierKind: String] = [:]
        for kind in IdentifierKind.allCases {
            if let value = try subject.string(kind.rawValue, maxLength: EvaluationRequest.maxIdentifierLength) {
                guard !value.isEmpty else { throw Problem.invalid("subject.\(kind.rawValue)", "must not be empty") }
                identifiers[kind] = value
            }
        }
        return identifiers
    }

    static func render(_ answer: SubjectService.Transparency, cursor: String?) -> JSONValue {
        var object = JSONObject()
        object.append("evaluations", .array(answer.page.entries.map(render)))
        if let cursor { object.append("cursor", .string(cursor)) }
        object.append("authorization", answer.authorization.map(render) ?? .null)
        return .object(object)
    }

    static func render(_ entry: SubjectHistoryEntry) -> JSONValue {
        var object = JSONObject()
        object.append("eventId", .string(entry.eventId))
        object.append("createdAt", .string(Timestamp.format(entry.createdAt)))
        object.append("category", .string(entry.category.rawValue))
        object.append("callerName", entry.callerName.map { .string($0) } ?? .null)
        object.append(
            "insights",
            .array(
                entry.insights.map { insight in
                    var item = JSONObject()
                    item.append("type", .string(insight.type))
                    item.append("modelVersion", insight.modelVersion.map { .string($0) } ?? .null)
                    switch insight.outcome {
                    case .value(let value): item.append("value", .string(value.rawValue))
                    case .error(let code): item.append("error", .string(code.rawValue))
                    }
                    return .object(item)
                }))
        object.append("decision", entry.decision.map { .string($0.rawValue) } ?? .null)
        return .object(object)
    }
}
