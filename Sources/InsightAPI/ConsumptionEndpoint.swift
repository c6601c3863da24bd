import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    /// `POST /v1/evaluations/{eventId}/consumption`: decodes the report; `ConsumptionService`
    /// records it.
    func consume(_ exchange: Exchange, eventId: String) throws {
        let caller = try exchange.authenticated()
        let root = try ObjectReader(
            try jsonBody(exchange.request), path: "", allowed: ["status", "insightIdsUsed", "intervention"])
        let status = try root.enumeration("status", ConsumptionStatus.self, required: true)!
        var used: [String] = []
        for (i, value) in (try root.array("insightIdsUsed", count: 0...EvaluationRequest.maxInsights) ?? []).enumerated() {
            // Characters, as the document's maxLength counts them (not UTF-8 bytes).
            guard case .string(let id) = value, !id.isEmpty, id.unicodeScalars.count <= EvaluationIdentifiers.maxLength else {
                throw Problem.invalid("insightIdsUsed[\(i)]", "must be an insight id from the evaluation")
            }
            if used.contains(id) { throw Problem.invalid("insightIdsUsed[\(i)]", "repeats an insight id") }
            used.append(id)
        }
        let intervention = try Self.intervention(root)
        let answered = exchange
        try useCases.consumption.report(
            status, insightIdsUsed: used, intervention: intervention, eventId: eventId, by: caller,
            resume: exchange.resume
        ) { result in
            answered.complete(result) { HTTPResponse(status: 204) }
        }
    }

    /// The report's `intervention` (docs/api.md "Interventions"), checked for shape here and
    /// against the catalogue and the evaluation's times by the store.
    static func intervention(_ root: ObjectReader) throws(Problem) -> RecordedIntervention? {
        guard
            let reader = try root.object(
                "intervention", allowed: ["kind", "templateId", "templateVersion", "shownAt", "response", "hold"])
        else { return nil }
        let kind = try reader.enumeration("kind", InterventionKind.self, required: true)!
        if kind == .none {
            for member in ["templateId", "templateVersion", "shownAt", "response", "hold"] where reader.value(member) != nil {
                throw Problem.invalid(reader.field(member), "must be absent when kind is none")
            }
            return RecordedIntervention(kind: .none)
        }
        var template: TemplateReference?
        if let id = try reader.string("templateId", maxLength: 64) {
            guard TemplateReference.isValidId(id) else {
                throw Problem.invalid(reader.field("templateId"), "must be 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit")
            }
            let range = Int64(TemplateReference.versions.lowerBound)...Int64(TemplateReference.versions.upperBound)
            let version = try reader.integer("templateVersion", in: range, required: true)!
            template = TemplateReference(id: id, version: Int(version))
        } else if reader.value("templateVersion") != nil {
            throw Problem.invalid(reader.field("templateVersion"), "needs a templateId")
        } else if kind.needsTemplate {
            throw Problem.invalid(reader.field("templateId"), "is required for a \(kind.rawValue): the catalogue's template that was shown")
        }
        let shownAt = try time(reader, "shownAt", required: true)!
        let response = try reader.enumeration("response", InterventionResponse.self, required: true)!
        var hold: InterventionHold?
        if let holdReader = try reader.object("hold", allowed: ["startedAt", "endedAt", "toldAt"]) {
            guard kind == .hold else { throw Problem.invalid(reader.field("hold"), "is for kind hold only") }
            hold = InterventionHold(
                startedAt: try time(holdReader, "startedAt", required: true)!,
                endedAt: try time(holdReader, "endedAt", required: true)!, toldAt: try time(holdReader, "toldAt", required: true)!)
        } else if kind == .hold {
            throw Problem.invalid(reader.field("hold"), "is required for kind hold: its start, end and when the person was told")
        }
        return RecordedIntervention(kind: kind, template: template, shownAt: shownAt, response: response, hold: hold)
    }

    /// A UTC time member as `Timestamp.format` writes it, with or without milliseconds.
    static func time(_ reader: ObjectReader, _ key: String, required: Bool) throws(Problem) -> Milliseconds? {
        guard let text = try reader.string(key, maxLength: 24, required: required) else { return nil }
        guard let ms = Timestamp.parse(text) else {
            throw Problem.invalid(reader.field(key), "must be a UTC time YYYY-MM-DDTHH:MM:SS[.sss]Z")
        }
        return ms
    }
}
