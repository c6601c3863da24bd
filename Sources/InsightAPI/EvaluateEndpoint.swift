import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    /// `POST /v1/evaluations`: decodes the body and the sandbox override, has `EvaluationService`
    /// evaluate (it takes the caller's token), and answers `200` once the evaluation is durable,
    /// with the answer's receipt in `Insight-Receipt`.
    func evaluate(_ exchange: Exchange) throws {
        let caller = try exchange.authenticated()
        var sandboxOverride: SandboxOverride?
        let request: EvaluationRequest
        do {
            if let header = exchange.request.headers[SandboxOverride.header] {
                try useCases.evaluation.permitOverride(for: caller)
                sandboxOverride = try SandboxOverride.parse(header)
            }
            request = try EvaluationRequest.decode(body: try jsonBytes(exchange.request))
        } catch {
            try useCases.quota.chargeRefusal(of: caller)
            throw error
        }
        let answered = exchange, requestId = request.requestId
        try useCases.evaluation.evaluate(request, by: caller, override: sandboxOverride,
                                         answer: { record, tenant in Self.render(record, tenant: tenant, requestId: requestId) },
                                         resume: exchange.resume) { result in
            answered.complete(result) { evaluated in
                var headers = Throttling.headers(evaluated.quota)
                headers.append((ReceiptHeader.name, ReceiptHeader.value(of: evaluated.receipt)))
                return Self.json(200, bytes: evaluated.answer, headers: headers)
            }
        }
    }

    /// The answer's bytes, written directly (it is made for every evaluation). It names the
    /// tenant and environment that answered, so that its receipt binds them: a sandbox answer
    /// cannot pass for a production one, nor one tenant's for another's.
    static func render(_ record: EvaluationRecord, tenant: String, requestId: String?) -> [UInt8] {
        var object = JSONObjectWriter()
        object.member("eventId", record.eventId)
        if let requestId { object.member("requestId", requestId) }
        object.member("tenant", tenant)
        object.member("environment", record.environment.rawValue)
        object.member("serverTimestamp", timestamp: record.createdAt)
        object.member("reportConsumptionBy", timestamp: record.reportConsumptionBy)
        object.member("insights", objects: record.insights) { object, insight in render(insight, into: &object) }
        if let decision = record.decision {
            object.member("decision") { object in
                object.member("action", decision.action.rawValue)
                object.member("reasons", strings: decision.reasons)
                object.member("policyVersion", decision.policyVersion)
            }
        }
        return object.bytes()
    }

    static func render(_ insight: InsightRecord, into object: inout JSONObjectWriter) {
        object.member("insightId", insight.insightId)
        object.member("type", insight.type)
        object.member("schemaVersion", Double(insight.schemaVersion))
        if let model = insight.modelVersion { object.member("modelVersion", model) }
        if let newest = insight.newestModelVersion { object.member("newestModelVersion", newest) }
        if let model = insight.modelVersion, let newest = insight.newestModelVersion {
            object.member("isUsingCurrentModel", model == newest)
        }
        switch insight.outcome {
        case .value(let value, let reasons):
            object.member("outcome") { $0.member("value", value.rawValue) }
            object.member("reasons", strings: reasons)
        case .error(let code, let detail):
            object.member("outcome") { outcome in
                outcome.member("error") { error in
                    error.member("code", code.rawValue)
                    error.member("detail", detail)
                }
            }
        }
    }
}
