import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    static let maxInsightIdLength = 64

    /// `POST /v1/evaluations/{eventId}/consumption`: one report per evaluation; the same
    /// report again is accepted, a different one is a conflict.
    func consume(_ exchange: Exchange, eventId: String) throws {
        let caller = try authenticate(exchange)
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["status", "insightIdsUsed"])
        let status = try root.enumeration("status", ConsumptionStatus.self, required: true)!
        var used: [String] = []
        for (i, value) in (try root.array("insightIdsUsed", count: 0...EvaluationRequest.maxInsights) ?? []).enumerated() {
            // Characters, as the document's maxLength counts them (not UTF-8 bytes).
            guard case .string(let id) = value, !id.isEmpty, id.unicodeScalars.count <= Self.maxInsightIdLength else {
                throw Problem.invalid("insightIdsUsed[\(i)]", "must be an insight id from the evaluation")
            }
            if used.contains(id) { throw Problem.invalid("insightIdsUsed[\(i)]", "repeats an insight id") }
            used.append(id)
        }
        // An id that cannot be one of ours cannot name an evaluation: no store round trip.
        guard eventId.utf8.count <= Self.maxInsightIdLength else {
            throw Problem(404, .evaluationNotFound, "No evaluation with this id exists for this caller.")
        }
        let report = ConsumptionReport(eventId: eventId, callerId: caller.caller.callerId,
                                       environment: caller.caller.environment, status: status, insightIdsUsed: used,
                                       reportedAt: dependencies.clock.now())
        let answered = exchange, usedIds = report.insightIdsUsed, metrics = dependencies.metrics
        dependencies.ledger.report(report, completion: answered.onLoop { result in
            switch result {
            case .success(.recorded(let timeliness)):
                metrics.consumed(status, timeliness)
                answered.send(HTTPResponse(status: 204))
            case .success(.alreadyRecorded):
                answered.send(HTTPResponse(status: 204))
            case .success(.conflict(let existing)):
                answered.fail(Problem(409, .consumptionConflict,
                                      "A report with status '\(existing.rawValue)' was already recorded for this evaluation."))
            case .success(.evaluationNotFound):
                answered.fail(Problem(404, .evaluationNotFound, "No evaluation with this id exists for this caller."))
            case .success(.unknownInsightIds(let unknown)):
                let index = usedIds.firstIndex(of: unknown[0]) ?? 0
                answered.fail(Problem.invalid("insightIdsUsed[\(index)]", "is not an insight of this evaluation"))
            case .failure(let failure):
                answered.fail(Problem.from(failure))
            }
        })
    }
}
