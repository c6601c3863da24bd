import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    /// `GET /admin/v1/decisions[?days=N]`: per caller of the admin's tenant, each action the
    /// policy decided and what the consumption reports of those evaluations said
    /// (`DecisionReportService`).
    func adminDecisions(_ exchange: Exchange) throws {
        let admin = try exchange.authenticated()
        let days = try Self.days(exchange.request.query)
        guard let service = useCases.decisionReports else {
            throw Problem(503, .serverError, "Decision reports are not available on this instance.")
        }
        let report = try service.report(of: admin, days: days)
        var object = JSONObject()
        object.append("from", .string(Timestamp.format(report.from)))
        object.append("to", .string(Timestamp.format(report.to)))
        object.append("callers", .array(report.callers.map(Self.render)))
        exchange.send(Self.json(200, .object(object)))
    }

    /// The period in days: `days=N` (1–400), the only query parameter; 7 without a query.
    static func days(_ query: String?) throws(Problem) -> Int {
        guard let query else { return 7 }
        let range = DecisionReportService.days
        guard query.hasPrefix("days="), let days = Int(query.dropFirst(5)), query.dropFirst(5).allSatisfy(\.isASCII),
            range.contains(days)
        else {
            throw Problem.invalid(
                "days", "must be a whole number from \(range.lowerBound) to \(range.upperBound), the only query parameter")
        }
        return days
    }

    static func render(_ entry: DecisionReportService.CallerDecisions) -> JSONValue {
        var object = JSONObject()
        object.append("callerId", .string(entry.callerId))
        object.append("name", entry.caller.map { .string($0.name) } ?? .null)
        object.append("environment", entry.caller.map { .string($0.environment.rawValue) } ?? .null)
        var actions = JSONObject()
        for action in DecisionAction.allCases {
            let counts = entry.actions[action] ?? DecisionReportService.ActionCounts()
            var statuses = JSONObject()
            for status in ConsumptionStatus.allCases {
                if let n = counts.statuses[status] { statuses.append(status.rawValue, .number(Double(n))) }
            }
            // Per intervention recorded, the reports by the person's response (`none` has none:
            // its reports are counted as `reports`).
            var interventions = JSONObject()
            for kind in InterventionKind.allCases {
                guard let byResponse = counts.interventions[kind] else { continue }
                var responses = JSONObject()
                for response in InterventionResponse.allCases {
                    if let n = byResponse[response] { responses.append(response.rawValue, .number(Double(n))) }
                }
                interventions.append(
                    kind.rawValue,
                    .object([
                        "reports": .number(Double(byResponse.values.reduce(0, +))), "responses": .object(responses)
                    ]))
            }
            actions.append(
                action.rawValue,
                .object([
                    "evaluations": .number(Double(counts.evaluations)), "reported": .number(Double(counts.reported)),
                    "proceeded": .number(Double(counts.proceeded)), "statuses": .object(statuses),
                    "interventions": .object(interventions)
                ]))
        }
        object.append("actions", .object(actions))
        object.append("proceededAgainstPolicy", .number(Double(entry.proceededAgainstPolicy)))
        return .object(object)
    }
}
