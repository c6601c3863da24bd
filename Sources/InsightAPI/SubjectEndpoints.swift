import Crypto
import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `POST /v1/subjects/transparency` (role `evaluate`) and `POST /v1/subjects/erasure` (role
/// `admin`): the person's view (PRODUCT.md §15, `SubjectService`). Identifiers travel only in
/// bodies, never in URLs, and are hashed before anything else happens to them.
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
        let limit = Int(try root.integer("limit", in: Int64(SubjectHistoryQuery.limits.lowerBound)...Int64(SubjectHistoryQuery.limits.upperBound)) ?? 50)
        let cursor = try root.string("cursor", maxLength: 64).map { text throws(Problem) in
            guard let cursor = TransparencyCursor.decode(text) else {
                throw Problem.invalid("cursor", "is not a cursor this API handed out")
            }
            return cursor
        }
        let answer = try useCases.subjects.transparency(kind: kind, identifier: identifier, limit: limit, after: cursor, by: caller)
        exchange.send(Self.json(200, Self.render(answer)))
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
                Self.json(200, .object(["tenant": .string(admin.tenant),
                                        "evaluations": .number(Double(erasure.report.evaluations)),
                                        "authorizations": .number(Double(erasure.report.authorizations)),
                                        "trainingVectors": .number(Double(erasure.report.trainingVectors)),
                                        "hashKeys": .number(Double(erasure.hashKeys))]))
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

    static func render(_ answer: SubjectService.Transparency) -> JSONValue {
        var object = JSONObject()
        object.append("evaluations", .array(answer.page.entries.map(render)))
        if let next = answer.page.next { object.append("cursor", .string(TransparencyCursor.encode(next))) }
        object.append("authorization", answer.authorization.map(render) ?? .null)
        return .object(object)
    }

    static func render(_ entry: SubjectHistoryEntry) -> JSONValue {
        var object = JSONObject()
        object.append("eventId", .string(entry.eventId))
        object.append("createdAt", .string(Timestamp.format(entry.createdAt)))
        object.append("category", .string(entry.category.rawValue))
        object.append("callerName", entry.callerName.map { .string($0) } ?? .null)
        object.append("insights", .array(entry.insights.map { insight in
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

/// The opaque `cursor` of a transparency page: the position (time, store sequence) as 32 hex
/// digits. It carries nothing a caller could not see, and a forged one only moves the page.
enum TransparencyCursor {
    static func encode(_ cursor: SubjectHistoryCursor) -> String {
        var bytes: [UInt8] = []
        for value in [cursor.time, cursor.sequence] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> Int64(shift))) }
        }
        return Hex.encode(bytes)
    }

    static func decode(_ text: String) -> SubjectHistoryCursor? {
        guard text.utf8.count == 32, let bytes = Hex.decode(text) else { return nil }
        func int(_ at: Int) -> Int64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | Int64($1) } }
        return SubjectHistoryCursor(time: int(0), sequence: int(8))
    }
}
