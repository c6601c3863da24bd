import Foundation

/// The result of ``InsightEvaluator/requestEvaluation(context:options:)``: ids and timestamps to
/// record with your transaction, and one result per requested insight.
///
/// Every evaluation needs a consumption report —
/// ``reportConsumption(_:insightIDsUsed:options:)`` — by ``reportConsumptionBy``.
public final class InsightEvaluation: Sendable {
    /// The evaluation's id. Record it with your transaction.
    public let eventID: String
    /// The `requestId` sent and verified on the way back: yours, or the one the evaluator generated.
    public let requestID: String
    /// The tenant whose caller was answered (nil from a service that does not name it).
    public let tenant: String?
    /// The environment that answered: `production`, or `sandbox` for a sandbox key.
    public let environment: Environment
    /// When the service computed the evaluation (UTC, millisecond precision).
    public let serverTimestamp: Date
    /// The deadline of the consumption report; later reports count as late.
    public let reportConsumptionBy: Date
    /// Every insight result, in the order they were requested.
    public let insights: [InsightResult]
    /// The verified receipt of the answer and its exact bytes, the proof to store with your
    /// transaction; nil when the evaluator's ``ReceiptVerification`` is `disabled` (or the
    /// evaluation was made from its parts).
    public let receipt: AnswerReceipt?
    /// What the service's decision policy answers for the operation; `nil` only from a service
    /// that predates decisions.
    public let decision: Decision?

    let client: APIClient?

    /// Creates an evaluation from its parts (e.g. for tests of your own decision logic). An
    /// evaluation created this way cannot report its consumption.
    public convenience init(
        eventID: String, requestID: String, environment: Environment, serverTimestamp: Date,
        reportConsumptionBy: Date, insights: [InsightResult], decision: Decision? = nil
    ) {
        self.init(
            eventID: eventID, requestID: requestID, tenant: nil, environment: environment, serverTimestamp: serverTimestamp,
            reportConsumptionBy: reportConsumptionBy, insights: insights, decision: decision, client: nil)
    }

    init(
        eventID: String, requestID: String, tenant: String?, environment: Environment, serverTimestamp: Date,
        reportConsumptionBy: Date, insights: [InsightResult], decision: Decision? = nil, client: APIClient?,
        receipt: AnswerReceipt? = nil
    ) {
        self.eventID = eventID
        self.requestID = requestID
        self.tenant = tenant
        self.environment = environment
        self.serverTimestamp = serverTimestamp
        self.reportConsumptionBy = reportConsumptionBy
        self.insights = insights
        self.decision = decision
        self.client = client
        self.receipt = receipt
    }

    /// The results of one insight type, typed, in request order (two when you asked for the
    /// current and a prior model version).
    public func insights<Insight: TrustInsight>(_ type: Insight.Type) -> [Insight] {
        insights.compactMap(Insight.init)
    }

    /// The first `isLikelyBeingCoached` result, or `nil` when none was requested.
    public var isLikelyBeingCoached: IsLikelyBeingCoached? { insights(IsLikelyBeingCoached.self).first }

    /// Reports how your service used this evaluation
    /// (`POST /v1/evaluations/{eventId}/consumption`). Mandatory for every evaluation, due by
    /// ``reportConsumptionBy``; unreported evaluations reduce your caller's rate limit.
    ///
    /// Reporting the same status and ids again succeeds and changes nothing, so the report is
    /// retried under the evaluator's ``RetryPolicy``, transport failures included.
    ///
    /// - Parameters:
    ///   - status: how the insights were used.
    ///   - insightIDsUsed: the ``InsightResult/insightID``s your decision used (0–4).
    ///   - options: per-request options.
    /// - Throws: ``EvaluationError/conflict`` when a different report is already recorded,
    ///   ``EvaluationError/notFound`` when the evaluation is not one of this caller's and
    ///   environment's, ``EvaluationError/contextInvalid(field:detail:)`` (field
    ///   `insightIdsUsed[i]`) for an id that is not in the evaluation.
    public func reportConsumption(
        _ status: ConsumptionStatus, insightIDsUsed: [String] = [],
        options: RequestOptions = RequestOptions()
    ) async throws(EvaluationError) {
        guard let client else {
            throw .unexpectedResponse(detail: "this evaluation was not returned by an InsightEvaluator")
        }
        try await client.reportConsumption(
            eventID: eventID, status: status, insightIDsUsed: insightIDsUsed,
            options: options)
    }

    /// Reports consumption naming the insights used; see ``reportConsumption(_:insightIDsUsed:options:)``.
    public func reportConsumption(
        _ status: ConsumptionStatus, insightsUsed: [any TrustInsight],
        options: RequestOptions = RequestOptions()
    ) async throws(EvaluationError) {
        try await reportConsumption(status, insightIDsUsed: insightsUsed.map(\.insightID), options: options)
    }
}

// MARK: - Decoding and verification

extension APIClient {
    /// `POST /v1/evaluations/{eventId}/consumption`; `204` is success.
    func reportConsumption(
        eventID: String, status: ConsumptionStatus, insightIDsUsed: [String],
        options: RequestOptions
    ) async throws(EvaluationError) {
        let body = try APIClient.encode(WireConsumptionReport(status: status.rawValue, insightIdsUsed: insightIDsUsed))
        _ = try await send(
            "POST", [InsightEvaluator.apiVersion, "evaluations", eventID, "consumption"],
            body: body, options: options)
    }
}

struct WireConsumptionReport: Encodable {
    let status: String
    let insightIdsUsed: [String]
}

/// The `200` body of `POST /v1/evaluations`. Unknown members are ignored.
struct WireEvaluationResponse: Decodable {
    struct Insight: Decodable {
        struct Outcome: Decodable {
            struct Failure: Decodable { let code: String; let detail: String? }
            let value: String?
            let error: Failure?
        }
        let insightId: String
        let type: String
        let schemaVersion: Int
        let modelVersion: String?
        let newestModelVersion: String?
        let isUsingCurrentModel: Bool?
        let outcome: Outcome
        let reasons: [String]?
    }
    let eventId: String
    let requestId: String?
    let tenant: String?
    let environment: String
    let serverTimestamp: String
    let reportConsumptionBy: String
    let insights: [Insight]
    struct WireDecision: Decodable { let action: String; let reasons: [String]; let policyVersion: String }
    let decision: WireDecision?
}

extension InsightEvaluation {
    /// Checks that a response is bound to the request sent: the same `requestId`, compared
    /// exactly. A different or missing one means the payload must not be trusted.
    static func verifyRequestID(sent: String, received: String?) throws(EvaluationError) {
        guard received == sent else { throw .requestIDMismatch(sent: sent, received: received) }
    }

    /// Decodes and verifies a `200` body: the request id first, then that it answers each
    /// requested insight, in order, with exactly one of a value or an error.
    static func decode(
        _ data: Data, sentRequestID: String, requested: [InsightRequest],
        client: APIClient?, receipt: AnswerReceipt? = nil
    ) throws(EvaluationError) -> InsightEvaluation {
        let wire = try APIClient.decode(WireEvaluationResponse.self, data)
        try verifyRequestID(sent: sentRequestID, received: wire.requestId)
        guard wire.insights.count == requested.count else {
            throw .unexpectedResponse(detail: "\(wire.insights.count) insights answered for \(requested.count) requested")
        }
        var insights: [InsightResult] = []
        for (index, (answer, request)) in zip(wire.insights, requested).enumerated() {
            guard answer.type == request.type, answer.schemaVersion == request.schemaVersion else {
                throw .unexpectedResponse(detail: "insights[\(index)] does not answer the insight requested there")
            }
            let outcome: Result<String, InsightError>
            switch (answer.outcome.value, answer.outcome.error) {
            case (let value?, nil): outcome = .success(value)
            case (nil, let error?): outcome = .failure(InsightError(code: error.code))
            default: throw .unexpectedResponse(detail: "insights[\(index)].outcome has neither or both of value and error")
            }
            insights.append(
                InsightResult(
                    insightID: answer.insightId, type: answer.type, schemaVersion: answer.schemaVersion,
                    modelVersion: answer.modelVersion, newestModelVersion: answer.newestModelVersion,
                    isUsingCurrentModel: answer.isUsingCurrentModel ?? false, outcome: outcome,
                    errorDetail: answer.outcome.error?.detail, reasons: answer.reasons ?? []))
        }
        guard let serverTimestamp = parseTimestamp(wire.serverTimestamp),
            let reportConsumptionBy = parseTimestamp(wire.reportConsumptionBy)
        else {
            throw .unexpectedResponse(detail: "a timestamp is not RFC 3339")
        }
        guard !wire.eventId.isEmpty else { throw .unexpectedResponse(detail: "eventId is empty") }
        return InsightEvaluation(
            eventID: wire.eventId, requestID: sentRequestID, tenant: wire.tenant,
            environment: Environment(rawValue: wire.environment),
            serverTimestamp: serverTimestamp, reportConsumptionBy: reportConsumptionBy,
            insights: insights,
            decision: wire.decision.map {
                Decision(
                    action: DecisionAction(rawValue: $0.action), reasons: $0.reasons,
                    policyVersion: $0.policyVersion)
            },
            client: client, receipt: receipt)
    }
}
