import CoachingModel
import Crypto
import InsightDomain

/// One insight asked for in an evaluation. The type is kept as sent: an unknown type is an
/// insight-level error (`insightUnavailable`), not a failure of the whole request.
public struct InsightRequest: Sendable, Equatable {
    public var type: String
    public var schemaVersion: Int
    public var modelVersion: String?

    public init(type: String, schemaVersion: Int, modelVersion: String? = nil) {
        self.type = type
        self.schemaVersion = schemaVersion
        self.modelVersion = modelVersion
    }
}

/// The raw subject identifiers. They live only until `EvaluationService` hashes them.
public struct RawSubject: Sendable {
    public var account: String?
    public var device: String?
    public var counterparty: String?

    public init(account: String? = nil, device: String? = nil, counterparty: String? = nil) {
        self.account = account
        self.device = device
        self.counterparty = counterparty
    }
}

/// What the client observed: timing events, or a feature summary computed on the device.
public enum InteractionInput: Sendable {
    case none
    case events([InteractionEvent], DeviceFacts)
    case summary(SummaryFeatures, DeviceFacts)
}

/// A validated evaluation request, as the API's decoders build it.
public struct EvaluationRequest: Sendable {
    public var requestId: String?
    /// SHA-256 of the request as sent (its body and sandbox override), which a retry under the
    /// same `requestId` must repeat; set by `keepRetryDigest` when `requestId` is.
    public var bodyDigest: [UInt8]?
    public var category: OperationCategory
    public var insights: [InsightRequest]
    public var subject: RawSubject
    public var interaction: InteractionInput
    /// The capture kit that produced the interaction, when the caller names it.
    public var source: InteractionSource?
    /// Events the capture kit says it left out at its event limit (counted, never stored).
    public var droppedEvents: Int64?
    /// Events of types this version does not know (a newer capture kit's), left out of the
    /// interaction: counted in `insightd_interaction_skipped_events_total` and in the answer.
    public var skippedEvents = 0
    /// Facts of the transaction (docs/decisions.md "How a policy decides"), read by the decision
    /// policy.
    public var transaction: TransactionFacts
    /// Who chose the operation, and an agent's facts (docs/agents.md), read by the decision policy.
    public var initiator: Initiator

    public init(
        requestId: String?, category: OperationCategory, insights: [InsightRequest], subject: RawSubject,
        interaction: InteractionInput, transaction: TransactionFacts = TransactionFacts(),
        initiator: Initiator = Initiator(), source: InteractionSource? = nil, droppedEvents: Int64? = nil
    ) {
        self.requestId = requestId
        self.category = category
        self.insights = insights
        self.subject = subject
        self.interaction = interaction
        self.source = source
        self.droppedEvents = droppedEvents
        self.transaction = transaction
        self.initiator = initiator
    }
}

/// The request's `transaction` member: closed facts only, never amounts or names.
public struct TransactionFacts: Sendable, Equatable {
    public typealias AmountBand = InsightDomain.AmountBand

    public var newCounterparty: Bool?
    public var amountBand: AmountBand?

    public init(newCounterparty: Bool? = nil, amountBand: AmountBand? = nil) {
        self.newCounterparty = newCounterparty
        self.amountBand = amountBand
    }
}

extension EvaluationRequest {
    /// Keeps what a retry under the same `requestId` must repeat, the request as sent: SHA-256 of
    /// the body, a zero byte and the sandbox override header's value (empty when absent). Nothing
    /// without a `requestId`. Hashed in place rather than joined in a copy of the body.
    public mutating func keepRetryDigest(body: [UInt8], override: String?) {
        guard requestId != nil else { return }
        var override = override ?? ""
        bodyDigest = body.withUnsafeBytes { body in
            override.withUTF8 { override in
                withUnsafeBytes(of: UInt8(0)) { zero in SHA256.digest(body, zero, UnsafeRawBufferPointer(override)) }
            }
        }
    }
}
