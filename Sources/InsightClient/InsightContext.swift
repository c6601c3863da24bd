/// Everything one evaluation request says: what the person is doing, which insights to answer,
/// who is involved, and what the app observed.
///
/// ```swift
/// let context = InsightContext(
///     operationCategory: .payment,
///     requestedInsights: [.isLikelyBeingCoached()],
///     requestID: "txn-2026-000123",
///     subject: .init(account: "cust-88121", device: "inst-5f2a", counterparty: "payee-7712"),
///     interaction: .events(events, device: .init(activeCall: true, callStartedBeforeSession: true)),
///     transaction: .init(newCounterparty: true, amountBand: .high))
/// ```
public struct InsightContext: Sendable, Hashable {
    /// The kind of operation; it selects the model logic.
    public var operationCategory: OperationCategory
    /// The insights to answer (1–4), each answered on its own in the same order.
    public var requestedInsights: [InsightRequest]
    /// Your transaction id (1–128 characters, no personal data), echoed back and checked by the
    /// client: a response bound to another id is refused with
    /// ``EvaluationError/requestIDMismatch(sent:received:)``. Best practice is an id your server
    /// generated for this transaction. When `nil`, the evaluator generates one.
    public var requestID: String?
    /// Who and what the operation involves; hashed by the service on arrival.
    public var subject: Subject?
    /// What the app observed during the session (timing only).
    public var interaction: Interaction?
    /// Coarse context of the transaction.
    public var transaction: TransactionContext?
    /// Who chose the operation: the person (when `nil`) or an AI agent in your app.
    public var initiator: Initiator?

    /// Creates a context. Only the category and the insights are required.
    public init(
        operationCategory: OperationCategory,
        requestedInsights: [InsightRequest] = [.isLikelyBeingCoached()],
        requestID: String? = nil,
        subject: Subject? = nil,
        interaction: Interaction? = nil,
        transaction: TransactionContext? = nil,
        initiator: Initiator? = nil
    ) {
        self.operationCategory = operationCategory
        self.requestedInsights = requestedInsights
        self.requestID = requestID
        self.subject = subject
        self.interaction = interaction
        self.transaction = transaction
        self.initiator = initiator
    }
}

/// One insight to answer: its type, the value schema you understand, and the model version.
public struct InsightRequest: Sendable, Hashable {
    /// The insight type identifier, e.g. `isLikelyBeingCoached`.
    public var type: String
    /// The value schema your code understands. The service never returns a value your schema
    /// version does not define; an unsupported version is answered with
    /// ``InsightError/insightVersionIncompatible``.
    public var schemaVersion: Int
    /// The model to answer with; ``ModelVersion/current`` unless you are validating a model.
    public var modelVersion: ModelVersion

    /// A request for an insight type this client may not model, by its raw identifiers.
    public init(type: String, schemaVersion: Int, modelVersion: ModelVersion = .current) {
        self.type = type
        self.schemaVersion = schemaVersion
        self.modelVersion = modelVersion
    }

    /// A request for a typed insight, as in Apple's API:
    /// `InsightRequest(insightType: IsLikelyBeingCoached.self, schema: .version1)`.
    public init<Insight: TrustInsight>(
        insightType: Insight.Type, schema: Insight.SchemaVersion,
        model: ModelVersion = .current
    ) {
        self.init(type: Insight.typeIdentifier, schemaVersion: schema.rawValue, modelVersion: model)
    }

    /// A request for ``IsLikelyBeingCoached``.
    public static func isLikelyBeingCoached(
        schema: IsLikelyBeingCoached.SchemaVersion = .version1,
        model: ModelVersion = .current
    ) -> InsightRequest {
        InsightRequest(insightType: IsLikelyBeingCoached.self, schema: schema, model: model)
    }
}

/// The identifiers an evaluation concerns. The service hashes them with a keyed HMAC on arrival
/// and never stores, logs or returns them; they drive velocity checks and subject authorization.
public struct Subject: Sendable, Hashable {
    /// Your account identifier (1–256 characters).
    public var account: String?
    /// Your device or app-installation identifier (1–256 characters).
    public var device: String?
    /// Your counterparty (payee) identifier (1–256 characters).
    public var counterparty: String?

    /// Creates a subject; every identifier is optional.
    public init(account: String? = nil, device: String? = nil, counterparty: String? = nil) {
        self.account = account
        self.device = device
        self.counterparty = counterparty
    }
}

/// Coarse context of the operation.
public struct TransactionContext: Sendable, Hashable {
    /// The first operation with this counterparty as far as you know.
    public var newCounterparty: Bool?
    /// The amount's band for your service.
    public var amountBand: AmountBand?

    /// Creates a transaction context; both members are optional.
    public init(newCounterparty: Bool? = nil, amountBand: AmountBand? = nil) {
        self.newCounterparty = newCounterparty
        self.amountBand = amountBand
    }
}

/// What the client app observed: timing only, never typed characters. Either raw events (the
/// service extracts features) or a feature summary computed on the device, each optionally with
/// device facts; or device facts alone. Each may name the capture kit that produced it
/// (``InteractionSource``).
public struct Interaction: Sendable, Hashable {
    /// The timed events, when the interaction was built with ``events(_:device:)``.
    public let events: [InteractionEvent]?
    /// The on-device feature summary, when built with ``summary(_:device:)``.
    public let summary: InteractionSummary?
    /// Platform facts about the session.
    public let device: DeviceFacts?
    /// The capture kit that produced the interaction.
    public let source: InteractionSource?

    /// Timed events in order: the first is `sessionStart` at time 0, and times never decrease.
    public static func events(
        _ events: [InteractionEvent], device: DeviceFacts? = nil,
        source: InteractionSource? = nil
    ) -> Interaction {
        Interaction(events: events, summary: nil, device: device, source: source)
    }

    /// A feature vector computed on the device (names and bounds in `docs/features.md`).
    public static func summary(
        _ summary: InteractionSummary, device: DeviceFacts? = nil,
        source: InteractionSource? = nil
    ) -> Interaction {
        Interaction(events: nil, summary: summary, device: device, source: source)
    }

    /// Device facts alone; judged without any timing feature.
    public static func device(_ device: DeviceFacts, source: InteractionSource? = nil) -> Interaction {
        Interaction(events: nil, summary: nil, device: device, source: source)
    }
}

/// The capture kit that produced an interaction: stored with the evaluation, so that the
/// service's model-performance report and drift split by platform and kit version.
public struct InteractionSource: Sendable, Hashable {
    /// The kit's name, e.g. `insight-capture-ios`: 1–32 letters, digits, `.`, `_`, `+`, `-`.
    public var kit: String
    /// The kit's version, e.g. `1.0.0`: 1–32 of the same characters.
    public var version: String
    /// Where the kit runs.
    public var platform: ClientPlatform
    /// Events the kit observed but left out at its event limit, if it says.
    public var droppedEvents: Int?

    /// Names the kit; a malformed name or version is refused with
    /// ``EvaluationError/contextInvalid(field:detail:)`` naming `interaction.source.kit` or `.version`.
    public init(kit: String, version: String, platform: ClientPlatform, droppedEvents: Int? = nil) {
        self.kit = kit
        self.version = version
        self.platform = platform
        self.droppedEvents = droppedEvents
    }
}

/// One observed event of the session.
public struct InteractionEvent: Sendable, Hashable {
    /// Milliseconds since `sessionStart` (0–3,600,000).
    public var milliseconds: Int
    /// What happened.
    public var type: InteractionEventType
    /// The kind of field concerned, for field events.
    public var field: InteractionField?

    /// Creates an event `milliseconds` after the session started.
    public init(at milliseconds: Int, _ type: InteractionEventType, field: InteractionField? = nil) {
        self.milliseconds = milliseconds
        self.type = type
        self.field = field
    }
}

/// Platform facts about the session. An omitted fact is unknown, never false.
public struct DeviceFacts: Sendable, Hashable {
    /// A phone call is or was active during the session.
    public var activeCall: Bool?
    /// The call was already running when the session started.
    public var callStartedBeforeSession: Bool?
    /// The screen is being shared or captured.
    public var screenSharing: Bool?
    /// A remote-access app is installed or running.
    public var remoteAccessApp: Bool?

    /// Creates device facts; leave unknown facts `nil`.
    public init(
        activeCall: Bool? = nil, callStartedBeforeSession: Bool? = nil,
        screenSharing: Bool? = nil, remoteAccessApp: Bool? = nil
    ) {
        self.activeCall = activeCall
        self.callStartedBeforeSession = callStartedBeforeSession
        self.screenSharing = screenSharing
        self.remoteAccessApp = remoteAccessApp
    }
}

/// The documented feature vector (`docs/features.md`), computed on the device and sent instead of
/// events. Absent features are missing, never zero; unknown names and out-of-range values are
/// refused with ``EvaluationError/contextInvalid(field:detail:)``.
public struct InteractionSummary: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// Feature values by name, e.g. `["sessionSeconds": 64, "activeCall": 1]`.
    public var features: [String: Double]

    /// Creates a summary from feature values by name.
    public init(_ features: [String: Double]) { self.features = features }

    /// Creates a summary from a dictionary literal.
    public init(dictionaryLiteral elements: (String, Double)...) {
        self.features = Dictionary(elements, uniquingKeysWith: { _, last in last })
    }

    /// The value of one feature, or `nil` when it is missing.
    public subscript(name: String) -> Double? {
        get { features[name] }
        set { features[name] = newValue }
    }
}
