// The string vocabularies of the insightd API. Each is a struct wrapping its wire string, with a
// static member per value this client version knows, so that a value added by a later version
// of the service (or sent by a caller ahead of this client) still travels: the set is open, as
// Apple's `@nonexhaustive` enums are.

/// The kind of operation an evaluation is for. It selects the model logic (thresholds may differ
/// per category) and is recorded with the evaluation.
///
/// The set is open: compare with the static members, and keep a default branch for values a
/// later version of the service may add.
public struct OperationCategory: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `payment`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Any exchange of assets, content or money, including in-app purchases.
    public static let payment = OperationCategory(rawValue: "payment")
    /// Registration, login, or changes to account or security details.
    public static let account = OperationCategory(rawValue: "account")
    /// Use of costly or constrained infrastructure, such as AI inference.
    public static let resourceUse = OperationCategory(rawValue: "resourceUse")
    /// Messages, forms, signing documents, connecting to other people.
    public static let communication = OperationCategory(rawValue: "communication")
    /// Operations that fit none of the other categories.
    public static let other = OperationCategory(rawValue: "other")

    /// The wire value.
    public var description: String { rawValue }
}

/// The platform a capture kit runs on (``InteractionSource/platform``).
///
/// The set is open: compare with the static members, and keep a default branch for values a
/// later version of the service may add.
public struct ClientPlatform: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `web`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Web pages and web views.
    public static let web = ClientPlatform(rawValue: "web")
    /// iOS and iPadOS apps.
    public static let ios = ClientPlatform(rawValue: "ios")
    /// Android apps.
    public static let android = ClientPlatform(rawValue: "android")
    /// Anything else.
    public static let other = ClientPlatform(rawValue: "other")

    /// The wire value.
    public var description: String { rawValue }
}

/// Which model version answers an insight request.
public enum ModelVersion: Hashable, Sendable {
    /// The service's current model; almost always the right choice.
    case current
    /// A specific version (from `GET /v1/insights`), typically a prior one run beside the current
    /// model to validate it. A version the service does not serve is answered per insight with
    /// ``InsightError/insightVersionUnavailable``.
    case specific(versionNumber: String)
}

/// The environment an API key belongs to. Environments never see each other's data.
public struct Environment: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `sandbox`.
    public let rawValue: String
    /// Wraps a wire value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Real traffic: evaluations feed rate limits, velocity and model metrics.
    public static let production = Environment(rawValue: "production")
    /// Integration testing: isolated from production, and outcomes may be forced with the
    /// `Insight-Override` header (see ``RequestOptions/insightOverride``).
    public static let sandbox = Environment(rawValue: "sandbox")

    /// The wire value.
    public var description: String { rawValue }
}

/// How your service used an evaluation, reported with
/// ``InsightEvaluation/reportConsumption(_:insightIDsUsed:options:)``. A report is due for every
/// evaluation by its ``InsightEvaluation/reportConsumptionBy`` deadline.
public struct ConsumptionStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `usedIncreasedFriction`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The insights were a factor in making the operation easier for the person.
    public static let usedReducedFriction = ConsumptionStatus(rawValue: "usedReducedFriction")
    /// The insights were evaluated but did not change the decision or the flow.
    public static let usedUnchangedFriction = ConsumptionStatus(rawValue: "usedUnchangedFriction")
    /// The insights were a factor in adding checks, delays or warnings.
    public static let usedIncreasedFriction = ConsumptionStatus(rawValue: "usedIncreasedFriction")
    /// The person cancelled the operation, so no decision was needed.
    public static let notUsedNotNeeded = ConsumptionStatus(rawValue: "notUsedNotNeeded")
    /// The insights could not be used: a failure, an insight error, or they arrived too late.
    public static let notUsedError = ConsumptionStatus(rawValue: "notUsedError")
    /// The insights were used only to evaluate their usefulness, with no effect on a decision.
    public static let usedEvaluationOnly = ConsumptionStatus(rawValue: "usedEvaluationOnly")

    /// The wire value.
    public var description: String { rawValue }
}

/// The kind of an ``InteractionEvent``.
public struct InteractionEventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `keyDown`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The session began; the first event, at time 0, exactly once.
    public static let sessionStart = InteractionEventType(rawValue: "sessionStart")
    /// A form field gained focus.
    public static let fieldFocus = InteractionEventType(rawValue: "fieldFocus")
    /// A form field lost focus.
    public static let fieldBlur = InteractionEventType(rawValue: "fieldBlur")
    /// A key was pressed (never which key).
    public static let keyDown = InteractionEventType(rawValue: "keyDown")
    /// A deletion (backspace or cut).
    public static let delete = InteractionEventType(rawValue: "delete")
    /// A paste (never what was pasted).
    public static let paste = InteractionEventType(rawValue: "paste")
    /// A tap.
    public static let tap = InteractionEventType(rawValue: "tap")
    /// A scroll.
    public static let scroll = InteractionEventType(rawValue: "scroll")
    /// The app went to the background.
    public static let appBackground = InteractionEventType(rawValue: "appBackground")
    /// The app came back to the foreground.
    public static let appForeground = InteractionEventType(rawValue: "appForeground")
    /// A phone call started.
    public static let callStart = InteractionEventType(rawValue: "callStart")
    /// A phone call ended.
    public static let callEnd = InteractionEventType(rawValue: "callEnd")
    /// Screen sharing or capture started.
    public static let screenShareStart = InteractionEventType(rawValue: "screenShareStart")
    /// Screen sharing or capture ended.
    public static let screenShareEnd = InteractionEventType(rawValue: "screenShareEnd")
    /// The device orientation changed.
    public static let orientationChange = InteractionEventType(rawValue: "orientationChange")
    /// The proximity sensor reports something near (the phone at the ear).
    public static let proximityNear = InteractionEventType(rawValue: "proximityNear")
    /// The proximity sensor reports nothing near.
    public static let proximityFar = InteractionEventType(rawValue: "proximityFar")
    /// The person submitted the operation.
    public static let submit = InteractionEventType(rawValue: "submit")

    /// The wire value.
    public var description: String { rawValue }
}

/// The kind of form field an event concerns — never its content.
public struct InteractionField: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `payee`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The payee, recipient or beneficiary.
    public static let payee = InteractionField(rawValue: "payee")
    /// The amount.
    public static let amount = InteractionField(rawValue: "amount")
    /// A payment reference or memo.
    public static let reference = InteractionField(rawValue: "reference")
    /// A one-time passcode.
    public static let otp = InteractionField(rawValue: "otp")
    /// A password or PIN.
    public static let password = InteractionField(rawValue: "password")
    /// Any other field.
    public static let other = InteractionField(rawValue: "other")

    /// The wire value.
    public var description: String { rawValue }
}

/// A coarse band for the amount of a transaction.
public struct AmountBand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `high`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A small amount for your service.
    public static let low = AmountBand(rawValue: "low")
    /// A middling amount for your service.
    public static let medium = AmountBand(rawValue: "medium")
    /// A large amount for your service.
    public static let high = AmountBand(rawValue: "high")

    /// The wire value.
    public var description: String { rawValue }
}
