import JSON

/// One velocity rule: when it fires it asks for the value to be raised by one level, with its
/// reason code. A shadow rule is evaluated and reported but changes nothing.
public struct VelocityRule: Sendable, Equatable {
    /// The rules insightd knows; the raw value is the name in the policy file and the reason code.
    public enum Kind: String, Sendable, CaseIterable {
        /// At least `threshold` evaluations for the account within `window`, this one included.
        case accountVelocity
        /// A device the account was not seen on within `window`, while it was seen on at least
        /// `threshold` other devices within `window`.
        case newDeviceForAccount
        /// At least `threshold` distinct accounts on the device within `window`, this one included.
        case sharedDevice
        /// At least `threshold` distinct other accounts with a medium/high result within 7 d paid
        /// the counterparty within `window`, and they are at least `minimumShare` of its payers
        /// there (a mule signal that spares popular payees).
        case counterpartyLinkedToCoaching
        /// At least `threshold` prior medium/high results for the account within `window`.
        case repeatedCoachingSignals
        /// A payment to a counterparty the account did not pay within 7 d, making at least
        /// `threshold` new counterparties for the account within `window`.
        case newCounterpartyVelocity
    }

    public var kind: Kind
    public var threshold: Int
    public var window: VelocityWindow
    /// Evaluated and reported in `Escalation.shadowReasons`, never applied.
    public var shadow: Bool
    /// `counterpartyLinkedToCoaching` only: the least share (0…1) of the counterparty's other
    /// payers within `window` that must have a medium/high result.
    public var minimumShare: Double

    public init(_ kind: Kind, threshold: Int, window: VelocityWindow, shadow: Bool = false, minimumShare: Double = 0) {
        self.kind = kind
        self.threshold = threshold
        self.window = window
        self.shadow = shadow
        self.minimumShare = minimumShare
    }

    /// The reason code it adds when it fires (also the rule's name in the policy file).
    public var reasonCode: String { kind.rawValue }

    /// The default of each rule (docs/velocity.md explains the choices).
    public static func defaultRule(_ kind: Kind) -> VelocityRule {
        switch kind {
        case .accountVelocity: return VelocityRule(kind, threshold: 10, window: .hour)
        case .newDeviceForAccount: return VelocityRule(kind, threshold: 1, window: .week)
        case .sharedDevice: return VelocityRule(kind, threshold: 4, window: .day)
        case .counterpartyLinkedToCoaching: return VelocityRule(kind, threshold: 2, window: .week, minimumShare: 0.25)
        case .repeatedCoachingSignals: return VelocityRule(kind, threshold: 2, window: .day)
        case .newCounterpartyVelocity: return VelocityRule(kind, threshold: 5, window: .day)
        }
    }

    /// The largest threshold that the caps of `limits` still let the rule reach.
    public func maximumThreshold(_ limits: VelocityLimits) -> Int {
        switch kind {
        case .accountVelocity, .newDeviceForAccount, .repeatedCoachingSignals, .newCounterpartyVelocity:
            return limits.eventsPerAccount
        case .sharedDevice: return limits.accountsPerDevice
        case .counterpartyLinkedToCoaching: return limits.payersPerCounterparty
        }
    }

    /// Whether the rule fires on `signals`.
    public func fires(on signals: VelocitySignals) -> Bool {
        switch kind {
        case .accountVelocity:
            return signals.hasAccount && signals.accountEvaluations[window] >= threshold
        case .newDeviceForAccount:
            guard signals.hasAccount && signals.hasDevice else { return false }
            if let seen = signals.deviceLastSeenForAccount, window.contains(seen, now: signals.now) { return false }
            return signals.otherAccountDevices(in: window) >= threshold
        case .sharedDevice:
            return signals.hasDevice && signals.deviceAccounts[window] >= threshold
        case .counterpartyLinkedToCoaching:
            let coached = signals.counterpartyCoachedPayers[window]
            return signals.hasCounterparty && coached >= threshold
                && Double(coached) >= minimumShare * Double(signals.counterpartyPayers[window])
        case .repeatedCoachingSignals:
            return signals.hasAccount && signals.accountCoachingResults[window] >= threshold
        case .newCounterpartyVelocity:
            return signals.isFirstPaymentToCounterparty && signals.accountNewCounterparties[window] >= threshold
        }
    }
}

/// The outcome of the escalation policy for one value.
public struct Escalation: Sendable, Equatable {
    /// The value to return.
    public var value: InsightValue
    /// Reason codes of the applied rules that fired (also when the value was already `high`).
    public var reasons: [String]
    /// Reason codes of shadow rules that fired: to be counted, not applied.
    public var shadowReasons: [String]
    /// Velocity raised the value (to store, and to pass back as `VelocityEvent.raisedByVelocity`).
    public var raised: Bool

    public init(value: InsightValue, reasons: [String] = [], shadowReasons: [String] = [], raised: Bool = false) {
        self.value = value
        self.reasons = reasons
        self.shadowReasons = shadowReasons
        self.raised = raised
    }
}

/// A policy file that cannot be used; `message` names the offending field.
public struct PolicyError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// How velocity may raise a value: by one level at most (`unknown`→`medium`, `medium`→`high`)
/// when at least one applied rule fires, never lowering it, so `high` never comes from
/// `unknown` in one evaluation.
public struct EscalationPolicy: Sendable, Equatable {
    public var rules: [VelocityRule]

    public init(rules: [VelocityRule]) { self.rules = rules }

    /// Every rule at its default, applied.
    public static let defaults = EscalationPolicy(rules: VelocityRule.Kind.allCases.map(VelocityRule.defaultRule))

    /// The value after velocity, with the reasons.
    public func apply(_ value: InsightValue, signals: VelocitySignals) -> Escalation {
        var escalation = Escalation(value: value)
        for rule in rules where rule.fires(on: signals) {
            if rule.shadow {
                if !escalation.shadowReasons.contains(rule.reasonCode) { escalation.shadowReasons.append(rule.reasonCode) }
            } else if !escalation.reasons.contains(rule.reasonCode) {
                escalation.reasons.append(rule.reasonCode)
            }
        }
        if !escalation.reasons.isEmpty {
            switch value {
            case .unknown: escalation.value = .medium
            case .medium, .high: escalation.value = .high
            }
            escalation.raised = escalation.value != value
        }
        return escalation
    }

    // MARK: The policy file

    /// Reads a policy file (docs/velocity.md, deploy/velocity-policy.json):
    ///
    ///     {"version": 1,
    ///      "rules": {"sharedDevice": {"mode": "shadow", "threshold": 5, "window": "24h"}, ...}}
    ///
    /// `mode` is `enforce`, `shadow` or `off`; rules and fields left out keep their defaults;
    /// unknown rules or fields, and thresholds the caps of `limits` cannot reach, are refused.
    public static func parse(_ text: String, limits: VelocityLimits = .init()) throws(PolicyError) -> EscalationPolicy {
        try parse(Array(text.utf8), limits: limits)
    }

    public static func parse(_ bytes: [UInt8], limits: VelocityLimits = .init()) throws(PolicyError) -> EscalationPolicy {
        let document: JSONValue
        do { document = try JSONParser.parse(bytes) } catch {
            throw PolicyError("policy: invalid JSON: \(error)")
        }
        guard case .object(let top) = document else { throw PolicyError("policy: expected an object") }
        for key in top.keys where key != "version" && key != "rules" {
            throw PolicyError("policy: unknown field \"\(key)\" (expected \"version\" and \"rules\")")
        }
        guard let version = top["version"] else {
            throw PolicyError("policy.version: missing (this server reads version 1)")
        }
        guard version.intValue == 1 else {
            throw PolicyError("policy.version: unsupported (this server reads version 1)")
        }
        var rules = VelocityRule.Kind.allCases.map { (rule: VelocityRule.defaultRule($0), enabled: true) }
        guard let rulesValue = top["rules"] else {
            return EscalationPolicy(rules: rules.map(\.rule))
        }
        guard case .object(let named) = rulesValue else { throw PolicyError("rules: expected an object keyed by rule name") }
        let known = VelocityRule.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        for (name, value) in named.members {
            guard let kind = VelocityRule.Kind(rawValue: name) else {
                throw PolicyError("rules.\(name): unknown rule (known: \(known))")
            }
            guard case .object(let fields) = value else { throw PolicyError("rules.\(name): expected an object") }
            let index = VelocityRule.Kind.allCases.firstIndex(of: kind)!
            var rule = rules[index].rule
            var enabled = true
            for (field, value) in fields.members {
                let path = "rules.\(name).\(field)"
                switch field {
                case "mode":
                    guard case .string(let mode) = value, ["enforce", "shadow", "off"].contains(mode) else {
                        throw PolicyError("\(path): expected \"enforce\", \"shadow\" or \"off\"")
                    }
                    rule.shadow = mode == "shadow"
                    enabled = mode != "off"
                case "threshold":
                    let maximum = rule.maximumThreshold(limits)
                    guard let n = value.intValue, n >= 1, n <= maximum else {
                        throw PolicyError("\(path): expected a whole number from 1 to \(maximum)")
                    }
                    rule.threshold = n
                case "window":
                    guard case .string(let text) = value, let window = VelocityWindow(rawValue: text) else {
                        throw PolicyError("\(path): expected \"1h\", \"24h\" or \"7d\"")
                    }
                    rule.window = window
                case "minimumShare" where kind == .counterpartyLinkedToCoaching:
                    guard let share = value.numberValue, share >= 0, share <= 1 else {
                        throw PolicyError("\(path): expected a number from 0 to 1")
                    }
                    rule.minimumShare = share
                default:
                    let fields =
                        kind == .counterpartyLinkedToCoaching
                        ? "mode, threshold, window, minimumShare" : "mode, threshold, window"
                    throw PolicyError("\(path): unknown field (expected \(fields))")
                }
            }
            if rule.threshold > rule.maximumThreshold(limits) {
                throw PolicyError(
                    "rules.\(name).threshold: \(rule.threshold) cannot be reached with the caps in force "
                        + "(at most \(rule.maximumThreshold(limits)))")
            }
            rules[index] = (rule, enabled)
        }
        return EscalationPolicy(rules: rules.filter(\.enabled).map(\.rule))
    }
}
