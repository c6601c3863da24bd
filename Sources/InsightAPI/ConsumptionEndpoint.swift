import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    /// `POST /v1/evaluations/{eventId}/consumption`: decodes the report; `ConsumptionService`
    /// records it.
    func consume(_ exchange: Exchange, eventId: String) throws {
        let caller = try exchange.authenticated()
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["status", "insightIdsUsed"])
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
        let answered = exchange
        try useCases.consumption.report(
            status, insightIdsUsed: used, eventId: eventId, by: caller,
            resume: exchange.resume
        ) { result in
            answered.complete(result) { HTTPResponse(status: 204) }
        }
    }
}
