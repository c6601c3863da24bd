/// What the caller should do with an operation (docs/decisions.md). The order of the cases is the
/// precedence: a decision takes the strongest action of the rules that match.
public enum DecisionAction: String, Sendable, CaseIterable, Comparable {
    /// Go ahead.
    case proceed
    /// Ask the person in the app before going ahead.
    case confirm
    /// Confirm through another channel, telling the person what is happening.
    case confirmOutOfBand
    /// Do not perform the operation.
    case block

    /// The stored code (0…3, in precedence order): a small integer keeps the row small.
    public var code: Int {
        switch self {
        case .proceed: 0;
        case .confirm: 1;
        case .confirmOutOfBand: 2;
        case .block: 3
        }
    }

    /// The action of a stored code; nil for a code this version does not know.
    public init?(code: Int) {
        switch code {
        case 0: self = .proceed
        case 1: self = .confirm
        case 2: self = .confirmOutOfBand
        case 3: self = .block
        default: return nil
        }
    }

    public static func < (lhs: DecisionAction, rhs: DecisionAction) -> Bool { lhs.code < rhs.code }
}

/// The decision of an evaluation: the action, the ids of the rules that decided it (its reason
/// codes), and the version of the policy that made it. Stored with the evaluation.
public struct Decision: Sendable, Equatable {
    public var action: DecisionAction
    /// Ids of the matching rules whose action is `action`, in the policy's order.
    public var reasons: [String]
    public var policyVersion: String

    public init(action: DecisionAction, reasons: [String], policyVersion: String) {
        self.action = action
        self.reasons = reasons
        self.policyVersion = policyVersion
    }
}

/// A transaction's amount, in bands only (never an amount).
public enum AmountBand: String, Sendable, CaseIterable {
    case low, medium, high
}

/// Who chose the operation (`initiator.kind`).
public enum InitiatorKind: String, Sendable, CaseIterable {
    /// The person, in the app's own interface (the default).
    case person
    /// An AI agent in the caller's app.
    case agent
}

/// A source of content in an agent's context that the caller does not control
/// (`initiator.agent.untrustedContext`).
public enum UntrustedSource: String, Sendable, CaseIterable {
    case email, message, web, calendar, document, publicFeed, toolOutput
}

/// What an agent's tool can do to the world (`initiator.agent.sideEffects`).
public enum SideEffect: String, Sendable, CaseIterable {
    case financial, externalCommunication, destructive, persistentStorage, sensitiveDataAccess, deviceControl
}

/// An enumeration whose cases a `CaseSet` holds: each case's position in `allCases`, given
/// without building `allCases` (the facts of every evaluation are made of them).
public protocol FactEnumeration: CaseIterable, Equatable, Sendable, RawRepresentable where RawValue == String {
    var ordinal: Int { get }
}

/// A set of cases of a small enumeration, as bits in the order of `allCases`.
public struct CaseSet<Element: FactEnumeration>: Sendable, Equatable, Hashable {
    public var bits: UInt16

    public init(bits: UInt16 = 0) { self.bits = bits }

    public init(_ elements: some Sequence<Element>) {
        bits = 0
        for element in elements { insert(element) }
    }

    public mutating func insert(_ element: Element) { bits |= 1 << UInt16(element.ordinal) }
    public func contains(_ element: Element) -> Bool { bits & 1 << UInt16(element.ordinal) != 0 }
    public var isEmpty: Bool { bits == 0 }
    public func intersects(_ other: CaseSet) -> Bool { bits & other.bits != 0 }
    /// The members, in the order of `allCases`.
    public var elements: [Element] { Element.allCases.filter(contains) }
}

extension UntrustedSource: FactEnumeration {
    public var ordinal: Int {
        switch self {
        case .email: 0
        case .message: 1
        case .web: 2
        case .calendar: 3
        case .document: 4
        case .publicFeed: 5
        case .toolOutput: 6
        }
    }
}

extension SideEffect: FactEnumeration {
    public var ordinal: Int {
        switch self {
        case .financial: 0
        case .externalCommunication: 1
        case .destructive: 2
        case .persistentStorage: 3
        case .sensitiveDataAccess: 4
        case .deviceControl: 5
        }
    }
}

extension VelocityRule.Kind: FactEnumeration {
    public var ordinal: Int {
        switch self {
        case .accountVelocity: 0
        case .newDeviceForAccount: 1
        case .sharedDevice: 2
        case .counterpartyLinkedToCoaching: 3
        case .repeatedCoachingSignals: 4
        case .newCounterpartyVelocity: 5
        }
    }
}

extension OperationCategory: FactEnumeration {
    public var ordinal: Int {
        switch self {
        case .payment: 0
        case .account: 1
        case .resourceUse: 2
        case .communication: 3
        case .other: 4
        }
    }
}

extension AmountBand: FactEnumeration {
    public var ordinal: Int {
        switch self {
        case .low: 0;
        case .medium: 1;
        case .high: 2
        }
    }
}

extension InsightValue: FactEnumeration {
    public var ordinal: Int {
        switch self {
        case .unknown: 0;
        case .medium: 1;
        case .high: 2
        }
    }
}

/// The facts an agent reports about the operation it chose (`initiator.agent`). Booleans the
/// caller leaves out are false: an agent operation counts as requested by the person, or its
/// arguments as clean, only when the caller says so.
public struct AgentFacts: Sendable, Equatable {
    /// The person asked for this action in this turn.
    public var userRequested: Bool
    /// Sources in the agent's context when it chose the action.
    public var untrustedContext: CaseSet<UntrustedSource>
    /// A payee, amount or recipient came from such a source.
    public var argumentsFromUntrustedContext: Bool
    public var sideEffects: CaseSet<SideEffect>

    public init(
        userRequested: Bool = false, untrustedContext: CaseSet<UntrustedSource> = CaseSet(),
        argumentsFromUntrustedContext: Bool = false, sideEffects: CaseSet<SideEffect> = CaseSet()
    ) {
        self.userRequested = userRequested
        self.untrustedContext = untrustedContext
        self.argumentsFromUntrustedContext = argumentsFromUntrustedContext
        self.sideEffects = sideEffects
    }
}

/// The request's `initiator` member. The agent's facts count only when the operation is an
/// agent's: `kind` is `agent`, or absent while `agent` is present.
public struct Initiator: Sendable, Equatable {
    public var kind: InitiatorKind?
    public var agent: AgentFacts?

    public init(kind: InitiatorKind? = nil, agent: AgentFacts? = nil) {
        self.kind = kind
        self.agent = agent
    }

    /// Who chose the operation.
    public var effectiveKind: InitiatorKind { kind ?? (agent != nil ? .agent : .person) }

    /// The agent's facts when an agent chose the operation; nil for a person's.
    public var agentFacts: AgentFacts? { effectiveKind == .agent ? agent ?? AgentFacts() : nil }
}

/// Everything a decision policy reads about one evaluation: closed values only.
public struct DecisionFacts: Sendable, Equatable {
    /// The highest coaching value answered (after velocity); nil when no coaching insight
    /// answered with a value.
    public var coaching: InsightValue?
    /// The velocity rules that raised or confirmed the coaching value.
    public var velocity: CaseSet<VelocityRule.Kind>
    public var category: OperationCategory
    public var newCounterparty: Bool
    public var amountBand: AmountBand?
    public var initiator: Initiator

    public init(
        coaching: InsightValue?, velocity: CaseSet<VelocityRule.Kind> = CaseSet(), category: OperationCategory,
        newCounterparty: Bool = false, amountBand: AmountBand? = nil, initiator: Initiator = Initiator()
    ) {
        self.coaching = coaching
        self.velocity = velocity
        self.category = category
        self.newCounterparty = newCounterparty
        self.amountBand = amountBand
        self.initiator = initiator
    }
}
