import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `/admin/v1/interventions` (role `admin`): the tenant's intervention catalogue in the admin's
/// environment (`InterventionCatalogService`; docs/api.md "Intervention catalogue").
extension InsightAPIHandler {
    /// `GET` (every entry) and `POST` (add one) `/admin/v1/interventions`
    func adminInterventions(_ exchange: Exchange) throws {
        let admin = try exchange.authenticated()
        guard let service = useCases.interventions else {
            throw Problem(503, .serverError, "The catalogue cannot be read right now; retry.")
        }
        guard exchange.request.method == "POST" else {
            let templates = try service.templates(of: admin)
            return exchange.send(Self.json(200, .object(["interventions": .array(templates.map(Self.render))])))
        }
        let root = try ObjectReader(
            try jsonBody(exchange.request), path: "", allowed: ["templateId", "version", "kind", "scamTypes", "description"])
        let id = try root.string("templateId", maxLength: 64, required: true)!
        guard TemplateReference.isValidId(id) else {
            throw Problem.invalid("templateId", "must be 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit")
        }
        let range = Int64(TemplateReference.versions.lowerBound)...Int64(TemplateReference.versions.upperBound)
        let version = Int(try root.integer("version", in: range, required: true)!)
        let kind = try root.enumeration("kind", InterventionKind.self, required: true)!
        guard kind != .none else { throw Problem.invalid("kind", "must be an intervention that shows something, not none") }
        var scamTypes: [ScamType] = []
        for (i, value) in try root.array("scamTypes", count: 1...ScamType.allCases.count, required: true)!.enumerated() {
            guard case .string(let code) = value, let type = ScamType(rawValue: code) else {
                throw Problem.invalid("scamTypes[\(i)]", "must be one of \(ScamType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            if scamTypes.contains(type) { throw Problem.invalid("scamTypes[\(i)]", "repeats a scam type") }
            scamTypes.append(type)
        }
        let description = try root.string("description", maxLength: InterventionTemplate.maxDescription, required: true)!
        guard InterventionTemplate.isValidDescription(description) else {
            throw Problem.invalid("description", "must be one line without control characters")
        }
        let answered = exchange
        service.add(
            TemplateReference(id: id, version: version), kind: kind, scamTypes: scamTypes, description: description, of: admin,
            resume: exchange.resume
        ) { result in
            answered.complete(result) { Self.json($0.added ? 201 : 200, Self.render($0.0)) }
        }
    }

    /// `POST /admin/v1/interventions/{templateId}/versions/{version}/retire`
    func adminInterventionRetire(_ exchange: Exchange, templateId: String, version: String) throws {
        let admin = try exchange.authenticated()
        guard let service = useCases.interventions else {
            throw Problem(503, .serverError, "The catalogue cannot be read right now; retry.")
        }
        // A path that cannot name an entry names none.
        guard TemplateReference.isValidId(templateId), let number = Int(version), TemplateReference.versions.contains(number),
            String(number) == version
        else { throw Problem(404, .interventionTemplateNotFound, "The catalogue has no template with this id and version.") }
        let answered = exchange
        service.retire(TemplateReference(id: templateId, version: number), of: admin, resume: exchange.resume) { result in
            answered.complete(result) { Self.json(200, Self.render($0)) }
        }
    }

    /// A catalogue entry as the admin API shows it; `insightctl interventions list --json` prints the same.
    public static func render(_ template: InterventionTemplate) -> JSONValue {
        var object = JSONObject()
        object.append("templateId", .string(template.id))
        object.append("version", .number(Double(template.version)))
        object.append("kind", .string(template.kind.rawValue))
        object.append("scamTypes", .array(template.scamTypes.map { .string($0.rawValue) }))
        object.append("description", .string(template.description))
        object.append("environment", .string(template.environment.rawValue))
        object.append("createdAt", .string(Timestamp.format(template.createdAt)))
        object.append("retiredAt", template.retiredAt.map { .string(Timestamp.format($0)) } ?? .null)
        return .object(object)
    }
}
