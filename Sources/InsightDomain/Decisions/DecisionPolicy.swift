import JSON

/// A condition on a set-valued fact: it holds when the fact's set meets `anyOf`, or when it is
/// empty or not (`true`/`false` in the policy file).
public enum SetCondition: Sendable, Equatable {
    case anyOf(UInt16)
    case present(Bool)

    func holds(_ bits: UInt16) -> Bool {
        switch self {
        case .anyOf(let mask): return bits & mask != 0
        case .present(let present): return (bits != 0) == present
        }
    }
}

/// What a rule requires of the facts; a condition left nil does not matter. All conditions must
/// hold. A condition on an agent's fact holds only for an agent's operation.
public struct RuleConditions: Sendable, Equatable {
    /// Over `InsightValue` bits, and `noCoachingBit` for no coaching value.
    public var coaching: UInt16?
    public var velocity: SetCondition?
    public var category: UInt16?
    public var newCounterparty: Bool?
    public var amountBand: UInt16?
    public var initiator: InitiatorKind?
    public var userRequested: Bool?
    public var untrustedContext: SetCondition?
    public var argumentsFromUntrustedContext: Bool?
    public var sideEffects: SetCondition?

    public init() {}

    /// The bit of "no coaching value" in `coaching`.
    static let noCoachingBit: UInt16 = 1 << 3

    var namesAgentFact: Bool {
        userRequested != nil || untrustedContext != nil || argumentsFromUntrustedContext != nil || sideEffects != nil
    }

    func holds(_ facts: DecisionFacts) -> Bool {
        if let coaching {
            let bit = facts.coaching.map { UInt16(1) << UInt16($0.ordinal) } ?? Self.noCoachingBit
            if coaching & bit == 0 { return false }
        }
        if let velocity, !velocity.holds(facts.velocity.bits) { return false }
        if let category, category & 1 << UInt16(facts.category.ordinal) == 0 { return false }
        if let newCounterparty, newCounterparty != facts.newCounterparty { return false }
        if let amountBand {
            guard let band = facts.amountBand, amountBand & 1 << UInt16(band.ordinal) != 0 else { return false }
        }
        if let initiator, initiator != facts.initiator.effectiveKind { return false }
        guard namesAgentFact else { return true }
        guard let agent = facts.initiator.agentFacts else { return false }
        if let userRequested, userRequested != agent.userRequested { return false }
        if let untrustedContext, !untrustedContext.holds(agent.untrustedContext.bits) { return false }
        if let argumentsFromUntrustedContext, argumentsFromUntrustedContext != agent.argumentsFromUntrustedContext { return false }
        if let sideEffects, !sideEffects.holds(agent.sideEffects.bits) { return false }
        return true
    }
}

/// One rule: when its conditions hold, it asks for its action, and its id becomes a reason code.
public struct DecisionRule: Sendable, Equatable {
    public var id: String
    public var action: DecisionAction
    public var conditions: RuleConditions
    /// Its line in the policy file (for messages).
    public var line: Int

    public init(id: String, action: DecisionAction, conditions: RuleConditions, line: Int) {
        self.id = id
        self.action = action
        self.conditions = conditions
        self.line = line
    }
}

/// A deterministic decision policy (docs/decisions.md "How a policy decides"): ordered rules over
/// the coaching value, velocity reasons, `transaction` and `initiator` facts. The decision takes
/// the strongest action of the rules that hold (`block > confirmOutOfBand > confirm > proceed`;
/// `proceed` when none holds) and, as reasons, the ids of the rules that hold with that action,
/// in the policy's order. Pure: the same facts always give the same decision.
public struct DecisionPolicy: Sendable, Equatable {
    public var version: String
    public var rules: [DecisionRule]

    public init(version: String, rules: [DecisionRule]) {
        self.version = version
        self.rules = rules
    }

    public func decide(_ facts: DecisionFacts) -> Decision {
        var action = DecisionAction.proceed
        var reasons: [String] = []
        for rule in rules where rule.action >= action && rule.conditions.holds(facts) {
            if rule.action > action {
                action = rule.action
                reasons.removeAll(keepingCapacity: true)
            }
            reasons.append(rule.id)
        }
        return Decision(action: action, reasons: reasons, policyVersion: version)
    }

    // MARK: The built-in default

    /// The default policy, in the file format (docs/decisions.md shows it; deploy/ carries it).
    public static let defaultText = """
        # insightd's built-in decision policy (docs/decisions.md). One JSON object per line:
        # the header names the version, each rule after it has an id, conditions and an action.
        {"policyVersion": "default-1"}
        {"id": "coachingHigh", "when": {"coaching": ["high"]}, "action": "confirmOutOfBand"}
        {"id": "coachingMedium", "when": {"coaching": ["medium"]}, "action": "confirm"}
        {"id": "coachedPaymentToNewCounterpartyHighAmount", "when": {"coaching": ["medium"], "newCounterparty": true, "amountBand": ["high"]}, "action": "confirmOutOfBand"}
        {"id": "counterpartyLinkedToCoachedPayers", "when": {"velocity": ["counterpartyLinkedToCoaching"]}, "action": "confirmOutOfBand"}
        {"id": "agentUntrustedContext", "when": {"untrustedContext": true, "sideEffects": ["financial", "destructive", "externalCommunication"]}, "action": "confirm"}
        {"id": "agentArgumentsFromUntrustedContext", "when": {"argumentsFromUntrustedContext": true, "sideEffects": ["financial"]}, "action": "confirmOutOfBand"}
        {"id": "agentNotRequestedByPerson", "when": {"userRequested": false, "sideEffects": ["financial", "destructive"]}, "action": "block"}
        {"id": "agentWhileCoachingHigh", "when": {"initiator": "agent", "coaching": ["high"]}, "action": "block"}

        """

    /// The built-in policy (`defaultText`, which a test holds parseable).
    public static let defaults: DecisionPolicy = {
        do { return try parse(defaultText) } catch { fatalError("the built-in decision policy does not parse: \(error)") }
    }()

    // MARK: The policy file

    public static let maxRules = 256
    public static let maxLineLength = 4096
    /// The largest policy file, comment and blank lines included: 256 rules of a full line
    /// each fit, and a file that is mostly comments cannot make every reload read megabytes.
    public static let maxBytes = 1 << 20
    /// The facts a rule may name, in the order messages list them.
    public static let factNames = [
        "coaching", "velocity", "category", "newCounterparty", "amountBand", "initiator",
        "userRequested", "untrustedContext", "argumentsFromUntrustedContext", "sideEffects"
    ]

    /// Reads a policy file: UTF-8 text, one JSON object per line; blank lines and lines starting
    /// with `#` are skipped. The first object is the header `{"policyVersion": "…"}`; each one
    /// after it is a rule `{"id": "…", "when": {fact: condition, …}, "action": "…"}`. Errors
    /// name the line, and the member at fault. A file larger than `maxBytes`, a line longer than
    /// `maxLineLength` (a comment too) and a policy without a rule are refused.
    public static func parse(_ text: String) throws(PolicyError) -> DecisionPolicy {
        guard text.utf8.count <= maxBytes else { throw PolicyError("larger than \(maxBytes) bytes (comment lines included)") }
        var version: String?
        var rules: [DecisionRule] = []
        var number = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            func fail(_ message: String) -> PolicyError { PolicyError("line \(number): \(message)") }
            guard line.utf8.count <= maxLineLength else { throw fail("longer than \(maxLineLength) bytes") }
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let value: JSONValue
            do { value = try JSONParser.parse(Array(line.utf8)) } catch { throw fail("not a JSON object: \(error)") }
            guard case .object(let object) = value else { throw fail("must be a JSON object, not \(value.kindDescription)") }
            if version == nil {
                version = try header(object, fail: fail)
                continue
            }
            guard rules.count < maxRules else { throw fail("more than \(maxRules) rules") }
            let rule = try self.rule(object, line: number, fail: fail)
            if let earlier = rules.first(where: { $0.id == rule.id }) {
                throw fail("id \"\(rule.id)\" is already the id of the rule on line \(earlier.line)")
            }
            rules.append(rule)
        }
        guard let version else { throw PolicyError("line \(number): no header {\"policyVersion\": \"…\"} before the end of the file") }
        // A header alone would answer proceed to everything: more likely a truncated file than
        // a wish, so it is refused (a policy that means it says so with a rule).
        guard !rules.isEmpty else {
            throw PolicyError(
                "line \(number): no rule after the header; a policy needs at least one (to proceed always, say so: {\"id\": \"always\", \"action\": \"proceed\"})"
            )
        }
        return DecisionPolicy(version: version, rules: rules)
    }

    private static func header(_ object: JSONObject, fail: (String) -> PolicyError) throws(PolicyError) -> String {
        for key in object.keys where key != "policyVersion" {
            throw fail("the first object is the header, whose only member is policyVersion; \"\(key)\" is unknown")
        }
        guard case .string(let version)? = object["policyVersion"] else {
            throw fail("the first object is the header {\"policyVersion\": \"…\"}")
        }
        guard isToken(version, extra: "._-") else {
            throw fail("policyVersion must be 1 to 64 letters, digits, '.', '_' or '-'")
        }
        return version
    }

    private static func isToken(_ text: String, extra: String = "") -> Bool {
        guard (1...64).contains(text.utf8.count) else { return false }
        let allowed = Set(extra.utf8)
        return text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || allowed.contains(byte)
        }
    }

    private static func rule(_ object: JSONObject, line: Int, fail: (String) -> PolicyError) throws(PolicyError) -> DecisionRule {
        for key in object.keys where !["id", "when", "action"].contains(key) {
            throw fail("unknown member \"\(key)\" of a rule (expected id, when, action)")
        }
        guard case .string(let id)? = object["id"] else { throw fail("id: required, a string") }
        guard isToken(id), id.utf8.first.map({ $0 >= 0x41 }) ?? false else {
            throw fail("id must be 1 to 64 letters and digits, starting with a letter (it becomes a reason code)")
        }
        let actions = DecisionAction.allCases.map(\.rawValue).joined(separator: ", ")
        guard case .string(let actionName)? = object["action"] else { throw fail("action: required, one of \(actions)") }
        guard let action = DecisionAction(rawValue: actionName) else {
            throw fail("action: unknown action \"\(String(actionName.prefix(64)))\" (known: \(actions))")
        }
        var conditions = RuleConditions()
        if let when = object["when"] {
            guard case .object(let facts) = when else { throw fail("when: must be an object of facts") }
            for (fact, condition) in facts.members {
                try read(fact, condition, into: &conditions, fail: fail)
            }
        }
        return DecisionRule(id: id, action: action, conditions: conditions, line: line)
    }

    private static func read(
        _ fact: String, _ value: JSONValue, into c: inout RuleConditions,
        fail: (String) -> PolicyError
    ) throws(PolicyError) {
        func flag() throws(PolicyError) -> Bool {
            guard case .bool(let flag) = value else { throw fail("when.\(fact): must be true or false") }
            return flag
        }
        func mask<E: FactEnumeration>(_: E.Type, extra: [String] = []) throws(PolicyError) -> UInt16 {
            let names = E.allCases.map(\.rawValue) + extra
            let message = "when.\(fact): must be a non-empty array of \(names.joined(separator: ", "))"
            guard case .array(let elements) = value, !elements.isEmpty else { throw fail(message) }
            var bits: UInt16 = 0
            for element in elements {
                guard case .string(let name) = element, let i = names.firstIndex(of: name) else {
                    throw fail(message + (element.stringValue.map { "; \"\(String($0.prefix(64)))\" is unknown" } ?? ""))
                }
                bits |= 1 << UInt16(i)
            }
            return bits
        }
        func set<E: FactEnumeration>(_ type: E.Type) throws(PolicyError) -> SetCondition {
            if case .bool(let present) = value { return .present(present) }
            do { return .anyOf(try mask(type)) } catch {
                throw fail(
                    "when.\(fact): must be true (any), false (none) or a non-empty array of "
                        + E.allCases.map(\.rawValue).joined(separator: ", "))
            }
        }
        switch fact {
        case "coaching": c.coaching = try mask(InsightValue.self, extra: ["none"])
        case "velocity": c.velocity = try set(VelocityRule.Kind.self)
        case "category": c.category = try mask(OperationCategory.self)
        case "newCounterparty": c.newCounterparty = try flag()
        case "amountBand": c.amountBand = try mask(AmountBand.self)
        case "initiator":
            guard case .string(let name) = value, let kind = InitiatorKind(rawValue: name) else {
                throw fail("when.initiator: must be \"person\" or \"agent\"")
            }
            c.initiator = kind
        case "userRequested": c.userRequested = try flag()
        case "untrustedContext": c.untrustedContext = try set(UntrustedSource.self)
        case "argumentsFromUntrustedContext": c.argumentsFromUntrustedContext = try flag()
        case "sideEffects": c.sideEffects = try set(SideEffect.self)
        default:
            throw fail("when: unknown fact \"\(String(fact.prefix(64)))\" (known: \(factNames.joined(separator: ", ")))")
        }
    }
}
