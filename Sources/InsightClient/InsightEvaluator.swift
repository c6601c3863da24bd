import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The entry point for requesting insights from an insightd service, shaped like Apple's Trust
/// Insights `InsightEvaluator`.
///
/// ```swift
/// let evaluator = InsightEvaluator(baseURL: URL(string: "https://insightd.internal")!, apiKey: key)
/// let evaluation = try await evaluator.requestEvaluation(context: InsightContext(
///     operationCategory: .payment, requestID: transactionID, interaction: .events(events)))
/// switch evaluation.isLikelyBeingCoached?.outcome {
/// case .success(.high)?: …          // inform the person before proceeding
/// case .success(.medium)?: …        // warning + delay
/// case .success(.unknown)?: …       // no evidence: your usual checks, no extra friction
/// default: …                        // an insight error or a value this client does not know
/// }
/// try await evaluation.reportConsumption(.usedIncreasedFriction,
///                                        insightIDsUsed: [evaluation.isLikelyBeingCoached!.insightID])
/// ```
///
/// The evaluator is immutable and safe to share between tasks; create one per service and key.
public final class InsightEvaluator: Sendable {
    /// The API version this client speaks (`/v1`).
    public static let apiVersion = "v1"

    let client: APIClient
    /// Verifies answers' receipts; nil when verification is disabled.
    let receipts: ReceiptVerifier?

    /// Creates an evaluator.
    /// - Parameters:
    ///   - baseURL: the service's root URL, e.g. `http://127.0.0.1:8080` (a path prefix is kept).
    ///   - apiKey: a key with the `evaluate` role; a sandbox key reaches the sandbox environment.
    ///   - session: the URL session to send requests with.
    ///   - retryPolicy: when a failed request is retried; see ``RetryPolicy``.
    ///   - receiptVerification: whether each answer's `Insight-Receipt` is verified: its head
    ///     against the service's JWKS (`GET /v1/signing-keys`, fetched when first needed and
    ///     again when a head names a key it does not list), the body's path to the head's root,
    ///     and the head's place after the instance's head this evaluator saw before. Required by
    ///     default.
    ///   - expectedScope: the tenant and environment of `apiKey`; every answer must name them.
    ///     Without it, every answer must name those of the first (one key answers for one tenant
    ///     and environment), so a sandbox answer cannot pass for a production one.
    ///   - signingKeyPins: the keys trusted to sign heads. Without pins the evaluator trusts
    ///     the key set `baseURL` serves, so a receipt proves the answer only as far as TLS to
    ///     insightd does; with them, a head signed by any other key fails. See ``SigningKeyPins``.
    public init(
        baseURL: URL, apiKey: String, session: URLSession = .shared, retryPolicy: RetryPolicy = .default,
        receiptVerification: ReceiptVerification = .required, expectedScope: AnswerScope? = nil,
        signingKeyPins: SigningKeyPins? = nil
    ) {
        client = APIClient(baseURL: baseURL, apiKey: apiKey, session: session, retryPolicy: retryPolicy)
        receipts =
            receiptVerification == .required
            ? ReceiptVerifier(client: client, scope: expectedScope, pins: signingKeyPins) : nil
    }

    /// Requests an evaluation (`POST /v1/evaluations`).
    ///
    /// The response is checked before it is returned: its `requestId` must be the one sent
    /// (otherwise ``EvaluationError/requestIDMismatch(sent:received:)``), and it must answer
    /// each requested insight in order. Failed attempts are retried only as ``RetryPolicy``
    /// allows, with the same body and `requestId`.
    ///
    /// Every evaluation returned must be followed by
    /// ``InsightEvaluation/reportConsumption(_:insightIDsUsed:options:)`` before
    /// ``InsightEvaluation/reportConsumptionBy``; unreported evaluations reduce your rate limit.
    ///
    /// - Parameters:
    ///   - context: what to evaluate. A `nil` ``InsightContext/requestID`` is replaced by a
    ///     generated one, available as ``InsightEvaluation/requestID``.
    ///   - options: per-request options, e.g. a sandbox ``RequestOptions/insightOverride``.
    /// - Returns: the evaluation, with one result per requested insight and, unless verification
    ///   is disabled, its verified ``InsightEvaluation/receipt``.
    /// - Throws: ``EvaluationError`` when the evaluation as a whole failed; per-insight failures
    ///   are returned in each insight's `outcome`.
    public func requestEvaluation(
        context: InsightContext,
        options: RequestOptions = RequestOptions()
    ) async throws(EvaluationError) -> InsightEvaluation {
        let requestID = context.requestID ?? Self.generateRequestID()
        let body = try APIClient.encode(WireEvaluationRequest(context, requestID: requestID))
        let response = try await client.send("POST", [Self.apiVersion, "evaluations"], body: body, options: options)
        // The receipt first: nothing of an answer that fails it is read.
        let receipt = try await receipts?.verify(body: response.body, receipt: response.receipt)
        return try InsightEvaluation.decode(
            response.body, sentRequestID: requestID,
            requested: context.requestedInsights, client: client, receipt: receipt)
    }

    /// Reports consumption for an evaluation known only by its ``InsightEvaluation/eventID`` —
    /// for instance one recorded before a restart. Same rules as
    /// ``InsightEvaluation/reportConsumption(_:insightIDsUsed:options:)``.
    public func reportConsumption(
        eventID: String, _ status: ConsumptionStatus, insightIDsUsed: [String] = [],
        options: RequestOptions = RequestOptions()
    ) async throws(EvaluationError) {
        try await client.reportConsumption(
            eventID: eventID, status: status, insightIDsUsed: insightIDsUsed,
            options: options)
    }

    /// A fresh request id: `req-` and 24 random letters (about 112 bits). Letters only, so it can
    /// never look like a phone, card or account number to the service's personal-data checks.
    static func generateRequestID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return "req-" + String((0..<24).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] })
    }
}

extension InsightEvaluator {
    /// Apple's spelling: `InsightEvaluator.OperationCategory`.
    public typealias OperationCategory = InsightClient.OperationCategory
    /// Apple's spelling: `InsightEvaluator.InsightContext`.
    public typealias InsightContext = InsightClient.InsightContext
    /// Apple's spelling: `InsightEvaluator.InsightRequest`.
    public typealias InsightRequest = InsightClient.InsightRequest
    /// Apple's spelling: `InsightEvaluator.ModelVersion`.
    public typealias ModelVersion = InsightClient.ModelVersion
    /// Apple's spelling: `InsightEvaluator.EvaluationError`.
    public typealias EvaluationError = InsightClient.EvaluationError
}

// MARK: - Wire format of the request

/// The `POST /v1/evaluations` body. Absent optionals are omitted.
struct WireEvaluationRequest: Encodable {
    struct Insight: Encodable { let type: String; let schemaVersion: Int; let modelVersion: String? }
    struct WireSubject: Encodable { let account: String?; let device: String?; let counterparty: String? }
    // Codable: `Interaction(json:)` decodes the capture kit's object with these.
    struct Event: Codable { let t: Int; let type: String; let field: String? }
    struct Device: Codable {
        let activeCall: Bool?; let callStartedBeforeSession: Bool?; let screenSharing: Bool?; let remoteAccessApp: Bool?
    }
    struct Source: Codable { let kit: String; let version: String; let platform: String; let droppedEvents: Int? }
    struct WireInteraction: Codable {
        let events: [Event]?; let summary: [String: Double]?; let device: Device?; let source: Source?
    }
    struct Transaction: Encodable { let newCounterparty: Bool?; let amountBand: String? }
    struct Agent: Encodable {
        let userRequested: Bool; let untrustedContext: [String]; let argumentsFromUntrustedContext: Bool; let sideEffects: [String]
    }
    struct WireInitiator: Encodable { let kind: String; let agent: Agent? }

    let requestId: String
    let operationCategory: String
    let insights: [Insight]
    let subject: WireSubject?
    let interaction: WireInteraction?
    let transaction: Transaction?
    let initiator: WireInitiator?

    init(_ context: InsightContext, requestID: String) {
        requestId = requestID
        operationCategory = context.operationCategory.rawValue
        insights = context.requestedInsights.map {
            let model: String?
            switch $0.modelVersion {
            case .current: model = nil
            case .specific(let version): model = version
            }
            return Insight(type: $0.type, schemaVersion: $0.schemaVersion, modelVersion: model)
        }
        subject = context.subject.map {
            WireSubject(account: $0.account, device: $0.device, counterparty: $0.counterparty)
        }
        interaction = context.interaction.map { interaction in
            WireInteraction(
                events: interaction.events?.map { Event(t: $0.milliseconds, type: $0.type.rawValue, field: $0.field?.rawValue) },
                summary: interaction.summary?.features,
                device: interaction.device.map {
                    Device(
                        activeCall: $0.activeCall, callStartedBeforeSession: $0.callStartedBeforeSession,
                        screenSharing: $0.screenSharing, remoteAccessApp: $0.remoteAccessApp)
                },
                source: interaction.source.map {
                    Source(kit: $0.kit, version: $0.version, platform: $0.platform.rawValue, droppedEvents: $0.droppedEvents)
                })
        }
        transaction = context.transaction.map {
            Transaction(newCounterparty: $0.newCounterparty, amountBand: $0.amountBand?.rawValue)
        }
        initiator = context.initiator.map {
            WireInitiator(
                kind: $0.kind.rawValue,
                agent: $0.agent.map {
                    Agent(
                        userRequested: $0.userRequested, untrustedContext: $0.untrustedContext.map(\.rawValue).sorted(),
                        argumentsFromUntrustedContext: $0.argumentsFromUntrustedContext,
                        sideEffects: $0.sideEffects.map(\.rawValue).sorted())
                })
        }
    }
}
