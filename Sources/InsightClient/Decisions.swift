// Decisions (docs/decisions.md): who chose an operation, sent in the request, and what the
// service's decision policy answers for it.

/// Who chose the operation: the person in your app's interface (the default), or an AI agent in
/// your app, with the facts the decision policy reads about it. Closed values only: never a
/// tool's name, a prompt or any text.
///
/// ```swift
/// let context = InsightContext(operationCategory: .payment,
///     transaction: .init(newCounterparty: true, amountBand: .high),
///     initiator: .agent(.init(userRequested: false, untrustedContext: [.email],
///                             argumentsFromUntrustedContext: true, sideEffects: [.financial])))
/// ```
public struct Initiator: Sendable, Hashable {
    /// `person` or `agent`.
    public var kind: InitiatorKind
    /// The agent's facts, for an agent's operation.
    public var agent: AgentContext?

    /// Creates an initiator; prefer ``person`` and ``agent(_:)``.
    public init(kind: InitiatorKind, agent: AgentContext? = nil) {
        self.kind = kind
        self.agent = agent
    }

    /// The person chose the operation.
    public static let person = Initiator(kind: .person)

    /// An AI agent in your app chose the operation.
    public static func agent(_ context: AgentContext) -> Initiator { Initiator(kind: .agent, agent: context) }
}

/// What an agent-initiated operation looks like from your app when the agent chose it. A fact
/// left `false` or empty counts as such: an operation counts as requested by the person only
/// when ``userRequested`` is `true`.
public struct AgentContext: Sendable, Hashable {
    /// The person asked for this action in this turn.
    public var userRequested: Bool
    /// Sources of content you do not control that were in the agent's context.
    public var untrustedContext: Set<UntrustedSource>
    /// A payee, amount or recipient of the action came from such a source.
    public var argumentsFromUntrustedContext: Bool
    /// What the tool that would run can do to the world.
    public var sideEffects: Set<SideEffect>

    /// Creates an agent's facts.
    public init(
        userRequested: Bool, untrustedContext: Set<UntrustedSource> = [],
        argumentsFromUntrustedContext: Bool = false, sideEffects: Set<SideEffect> = []
    ) {
        self.userRequested = userRequested
        self.untrustedContext = untrustedContext
        self.argumentsFromUntrustedContext = argumentsFromUntrustedContext
        self.sideEffects = sideEffects
    }
}

/// Who chose an operation. The set is open, as the other vocabularies.
public struct InitiatorKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `agent`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The person, in your app's interface.
    public static let person = InitiatorKind(rawValue: "person")
    /// An AI agent in your app.
    public static let agent = InitiatorKind(rawValue: "agent")

    /// The wire value.
    public var description: String { rawValue }
}

/// A source of content in an agent's context that you do not control.
public struct UntrustedSource: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `email`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The body or attachments of an email.
    public static let email = UntrustedSource(rawValue: "email")
    /// A chat or text message.
    public static let message = UntrustedSource(rawValue: "message")
    /// A web page.
    public static let web = UntrustedSource(rawValue: "web")
    /// A calendar event, e.g. an invitation from someone else.
    public static let calendar = UntrustedSource(rawValue: "calendar")
    /// A document or file, e.g. one shared with the person.
    public static let document = UntrustedSource(rawValue: "document")
    /// A public feed or post.
    public static let publicFeed = UntrustedSource(rawValue: "publicFeed")
    /// The output of a tool that read any of these, or other external data.
    public static let toolOutput = UntrustedSource(rawValue: "toolOutput")

    /// The wire value.
    public var description: String { rawValue }
}

/// What an agent's tool can do to the world.
public struct SideEffect: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `financial`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Moves money or buys something.
    public static let financial = SideEffect(rawValue: "financial")
    /// Sends or posts something outside the app (a message, an email, a public post).
    public static let externalCommunication = SideEffect(rawValue: "externalCommunication")
    /// Deletes or overwrites something without undo.
    public static let destructive = SideEffect(rawValue: "destructive")
    /// Stores text the agent chose where a later prompt may read it back.
    public static let persistentStorage = SideEffect(rawValue: "persistentStorage")
    /// Reads private data into the agent's context.
    public static let sensitiveDataAccess = SideEffect(rawValue: "sensitiveDataAccess")
    /// Controls a device or something physical.
    public static let deviceControl = SideEffect(rawValue: "deviceControl")

    /// The wire value.
    public var description: String { rawValue }
}

/// What the service's deterministic decision policy answers for the operation.
public struct Decision: Sendable, Hashable {
    /// What to do.
    public var action: DecisionAction
    /// The ids of the policy's rules that decided it, in the policy's order.
    public var reasons: [String]
    /// The version of the policy that decided (`default-1`: the service's built-in default).
    public var policyVersion: String

    /// Creates a decision (e.g. for tests of your own code).
    public init(action: DecisionAction, reasons: [String], policyVersion: String) {
        self.action = action
        self.reasons = reasons
        self.policyVersion = policyVersion
    }
}

/// What to do with the operation. The set is open: keep a default branch, and treat a value this
/// client version does not know as ``block``.
public struct DecisionAction: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `confirm`.
    public let rawValue: String
    /// Wraps a wire value; use the static members for the values this client version knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Go ahead.
    public static let proceed = DecisionAction(rawValue: "proceed")
    /// Ask the person in the app first.
    public static let confirm = DecisionAction(rawValue: "confirm")
    /// Confirm through another channel, and tell the person what is happening.
    public static let confirmOutOfBand = DecisionAction(rawValue: "confirmOutOfBand")
    /// Do not perform the operation.
    public static let block = DecisionAction(rawValue: "block")

    /// The wire value.
    public var description: String { rawValue }
}
