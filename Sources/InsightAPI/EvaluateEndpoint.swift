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
        var request: EvaluationRequest
        do {
            let header = exchange.request.headers[SandboxOverride.header]
            if let header {
                try useCases.evaluation.permitOverride(for: caller)
                sandboxOverride = try SandboxOverride.parse(header)
            }
            let body = try jsonBytes(exchange.request)
            request = try EvaluationRequest.decode(body: body)
            request.keepRetryDigest(body: body, override: header)
        } catch {
            try useCases.quota.chargeRefusal(of: caller)
            throw error
        }
        let answered = exchange
        try useCases.evaluation.evaluate(
            request, by: caller, override: sandboxOverride, answer: EvaluationAnswer(skippedEvents: request.skippedEvents),
            resume: exchange.resume
        ) { result in
            answered.complete(result) { evaluated in
                var headers = Throttling.headers(evaluated.quota)
                headers.append((ReceiptHeader.name, ReceiptHeader.value(of: evaluated.receipt)))
                if evaluated.replayed { headers.append((EvaluationAnswer.replayedHeader, "true")) }
                return Self.json(200, bytes: evaluated.answer, headers: headers)
            }
        }
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

/// The body of `POST /v1/evaluations`' 200, written directly. Its members, in order: `eventId`,
/// `requestId` (when sent), `tenant`, `environment`, `serverTimestamp`, `reportConsumptionBy`,
/// `skippedEvents` (when events were skipped), `insights`, `decision`. What a retry is answered from is the body without `requestId`; the
/// member is put back after `eventId`, so that a retry gets the first answer byte for byte.
struct EvaluationAnswer: AnswerWriter {
    /// Marks an answer given before, to an earlier request with the same `requestId` and bytes.
    static let replayedHeader = "Idempotent-Replayed"

    /// Events of types this version does not know, left out of the evaluation (said when not 0).
    var skippedEvents = 0

    func answer(_ record: EvaluationRecord, tenant: String) -> [UInt8] {
        var object = JSONObjectWriter()
        object.member("eventId", record.eventId)
        object.member("tenant", tenant)
        object.member("environment", record.environment.rawValue)
        object.member("serverTimestamp", timestamp: record.createdAt)
        object.member("reportConsumptionBy", timestamp: record.reportConsumptionBy)
        if skippedEvents > 0 { object.member("skippedEvents", Double(skippedEvents)) }
        object.member("insights", objects: record.insights) { object, insight in
            InsightAPIHandler.render(insight, into: &object)
        }
        if let decision = record.decision {
            object.member("decision") { object in
                object.member("action", decision.action.rawValue)
                object.member("reasons", strings: decision.reasons)
                object.member("policyVersion", decision.policyVersion)
            }
        }
        return object.bytes()
    }

    func naming(_ answer: [UInt8], eventId: String, requestId: String) -> [UInt8] {
        // `{"eventId":"…"` is the same in both; what follows it in `answer` (`,"tenant"…`) follows
        // the requestId member. One buffer, sized for the whole answer.
        var named = JSONObjectWriter(capacity: answer.count + requestId.utf8.count + 32)
        named.member("eventId", eventId)
        let eventIdEnd = named.count
        named.member("requestId", requestId)
        var bytes = named.bytes()
        bytes.removeLast()
        bytes.append(contentsOf: answer[eventIdEnd...])
        return bytes
    }
}
