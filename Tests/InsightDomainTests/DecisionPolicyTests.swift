import Foundation
import InsightDomain
import XCTest

/// The decision policy engine (docs/decisions.md): the built-in default's answers, precedence and
/// reasons, and the policy file's errors, each naming its line.
final class DecisionPolicyTests: XCTestCase {
    private let policy = DecisionPolicy.defaults

    private func agent(
        requested: Bool = true, untrusted: [UntrustedSource] = [], argumentsUntrusted: Bool = false,
        effects: [SideEffect] = []
    ) -> Initiator {
        Initiator(
            kind: .agent,
            agent: AgentFacts(
                userRequested: requested, untrustedContext: CaseSet(untrusted),
                argumentsFromUntrustedContext: argumentsUntrusted, sideEffects: CaseSet(effects)))
    }

    private func decide(
        _ coaching: InsightValue? = .unknown, category: OperationCategory = .payment,
        initiator: Initiator = Initiator(), newCounterparty: Bool = false, amountBand: AmountBand? = nil,
        velocity: [VelocityRule.Kind] = []
    ) -> Decision {
        policy.decide(
            DecisionFacts(
                coaching: coaching, velocity: CaseSet(velocity), category: category,
                newCounterparty: newCounterparty, amountBand: amountBand, initiator: initiator))
    }

    func testTheDefaultPolicyEncodesTheRulesOfTheContract() {
        XCTAssertEqual(policy.version, "default-1")
        // A person's operation: coaching decides.
        XCTAssertEqual(decide(.unknown), Decision(action: .proceed, reasons: [], policyVersion: "default-1"))
        XCTAssertEqual(decide(nil).action, .proceed, "no coaching value is no evidence")
        XCTAssertEqual(decide(.medium), Decision(action: .confirm, reasons: ["coachingMedium"], policyVersion: "default-1"))
        XCTAssertEqual(decide(.high), Decision(action: .confirmOutOfBand, reasons: ["coachingHigh"], policyVersion: "default-1"))
        // An agent's operation with a risky side effect and untrusted context: confirm.
        for effect in [SideEffect.financial, .destructive, .externalCommunication] {
            XCTAssertEqual(decide(initiator: agent(untrusted: [.email], effects: [effect])).reasons, ["agentUntrustedContext"], "\(effect)")
        }
        XCTAssertEqual(decide(initiator: agent(untrusted: [.web], effects: [.persistentStorage])).action, .proceed)
        XCTAssertEqual(decide(initiator: agent(effects: [.financial])).action, .proceed, "requested, no untrusted context")
        // Its arguments from untrusted context with a financial side effect: out of band.
        XCTAssertEqual(
            decide(initiator: agent(untrusted: [.email, .web], argumentsUntrusted: true, effects: [.financial])),
            Decision(action: .confirmOutOfBand, reasons: ["agentArgumentsFromUntrustedContext"], policyVersion: "default-1"))
        XCTAssertEqual(
            decide(initiator: agent(untrusted: [.email], argumentsUntrusted: true, effects: [.externalCommunication])).action,
            .confirm)
        // Not requested by the person, with a financial or destructive side effect: block.
        XCTAssertEqual(decide(initiator: agent(requested: false, effects: [.destructive])).reasons, ["agentNotRequestedByPerson"])
        XCTAssertEqual(
            decide(initiator: agent(requested: false, untrusted: [.email], argumentsUntrusted: true, effects: [.financial])),
            Decision(action: .block, reasons: ["agentNotRequestedByPerson"], policyVersion: "default-1"))
        XCTAssertEqual(decide(initiator: agent(requested: false, effects: [.externalCommunication])).action, .proceed)
        // Any agent operation while coaching is high: block.
        XCTAssertEqual(
            decide(.high, initiator: agent()), Decision(action: .block, reasons: ["agentWhileCoachingHigh"], policyVersion: "default-1"))
        // An agent's facts say nothing about a person's operation.
        XCTAssertEqual(
            decide(initiator: Initiator(kind: .person, agent: AgentFacts(userRequested: false, sideEffects: CaseSet([.financial])))).action,
            .proceed)
        XCTAssertEqual(
            decide(initiator: Initiator(agent: AgentFacts(sideEffects: CaseSet([.financial])))).action, .block,
            "agent facts without a kind are an agent's, and unsaid userRequested is false")
        // Transaction and velocity facts.
        XCTAssertEqual(decide(.medium, newCounterparty: true, amountBand: .high).reasons, ["coachedPaymentToNewCounterpartyHighAmount"])
        XCTAssertEqual(decide(.medium, newCounterparty: true, amountBand: .medium).action, .confirm)
        XCTAssertEqual(
            decide(.high, velocity: [.counterpartyLinkedToCoaching]).reasons,
            ["coachingHigh", "counterpartyLinkedToCoachedPayers"], "reasons in the policy's order")
    }

    func testTheStrongestActionWinsAndOnlyItsRulesAreReasons() throws {
        let policy = try DecisionPolicy.parse(
            """
            {"policyVersion": "t-1"}
            {"id": "anything", "when": {}, "action": "proceed"}
            {"id": "payment", "when": {"category": ["payment"]}, "action": "confirm"}
            {"id": "high", "when": {"amountBand": ["high"]}, "action": "confirm"}
            {"id": "agent", "when": {"initiator": "agent"}, "action": "block"}
            """)
        func decide(_ category: OperationCategory, _ band: AmountBand?, _ kind: InitiatorKind = .person) -> Decision {
            policy.decide(DecisionFacts(coaching: nil, category: category, amountBand: band, initiator: Initiator(kind: kind)))
        }
        XCTAssertEqual(decide(.account, nil), Decision(action: .proceed, reasons: ["anything"], policyVersion: "t-1"))
        XCTAssertEqual(decide(.payment, .high).reasons, ["payment", "high"])
        XCTAssertEqual(decide(.account, .high).reasons, ["high"])
        XCTAssertEqual(decide(.payment, .high, .agent), Decision(action: .block, reasons: ["agent"], policyVersion: "t-1"))
        XCTAssertEqual(DecisionAction.allCases.sorted(), [.proceed, .confirm, .confirmOutOfBand, .block])
        XCTAssertEqual(DecisionAction.allCases.map { DecisionAction(code: $0.code) }, DecisionAction.allCases)
        XCTAssertNil(DecisionAction(code: 4))
    }

    func testSetConditionsMatchAnyOfAndPresence() throws {
        let policy = try DecisionPolicy.parse(
            """
            {"policyVersion": "t-2"}
            {"id": "noContext", "when": {"untrustedContext": false}, "action": "confirm"}
            {"id": "mail", "when": {"untrustedContext": ["email", "message"]}, "action": "confirmOutOfBand"}
            {"id": "anyVelocity", "when": {"velocity": true}, "action": "confirm"}
            {"id": "noCoaching", "when": {"coaching": ["none"]}, "action": "confirm"}
            """)
        func decide(_ sources: [UntrustedSource]?, velocity: [VelocityRule.Kind] = [], coaching: InsightValue? = .unknown) -> [String] {
            let initiator = sources.map { Initiator(kind: .agent, agent: AgentFacts(untrustedContext: CaseSet($0))) } ?? Initiator()
            return policy.decide(DecisionFacts(coaching: coaching, velocity: CaseSet(velocity), category: .other, initiator: initiator))
                .reasons
        }
        XCTAssertEqual(decide([]), ["noContext"])
        XCTAssertEqual(decide([.web]), [])
        XCTAssertEqual(decide([.web, .message]), ["mail"])
        XCTAssertEqual(decide(nil), [], "a person's operation has no agent facts")
        XCTAssertEqual(decide(nil, velocity: [.sharedDevice]), ["anyVelocity"])
        XCTAssertEqual(decide(nil, coaching: nil), ["noCoaching"])
    }

    func testTheDefaultTextIsAValidPolicyFileAndTheShippedFileIsIt() throws {
        XCTAssertEqual(try DecisionPolicy.parse(DecisionPolicy.defaultText), DecisionPolicy.defaults)
        XCTAssertEqual(DecisionPolicy.defaults.rules.count, 8)
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("deploy/decision-policy.jsonl")
        XCTAssertEqual(
            try String(contentsOf: shipped, encoding: .utf8), DecisionPolicy.defaultText,
            "deploy/decision-policy.jsonl is the built-in default")
    }

    func testEveryErrorOfAPolicyFileNamesItsLine() {
        func error(_ text: String) -> String {
            do {
                _ = try DecisionPolicy.parse(text)
                return "accepted"
            } catch {
                return error.message
            }
        }
        let header = #"{"policyVersion": "v1"}"# + "\n"
        XCTAssertEqual(
            error(header + "# a comment\n\n" + #"{"id": "a", "when": {"colour": ["red"]}, "action": "block"}"#),
            "line 4: when: unknown fact \"colour\" (known: coaching, velocity, category, newCounterparty, amountBand, initiator, userRequested, untrustedContext, argumentsFromUntrustedContext, sideEffects)"
        )
        XCTAssertEqual(
            error(header + #"{"id": "a", "action": "allow"}"#),
            "line 2: action: unknown action \"allow\" (known: proceed, confirm, confirmOutOfBand, block)")
        XCTAssertEqual(error(header + #"{"id": "a"}"#), "line 2: action: required, one of proceed, confirm, confirmOutOfBand, block")
        XCTAssertEqual(error(header + #"{"action": "block"}"#), "line 2: id: required, a string")
        XCTAssertEqual(error(header + #"{"id": "9a", "action": "block"}"#).prefix(19), "line 2: id must be ")
        XCTAssertEqual(
            error(header + #"{"id": "a", "action": "block"}"# + "\n" + #"{"id": "a", "action": "confirm"}"#),
            "line 3: id \"a\" is already the id of the rule on line 2")
        XCTAssertEqual(
            error(header + #"{"id": "a", "action": "block", "then": 1}"#),
            "line 2: unknown member \"then\" of a rule (expected id, when, action)")
        XCTAssertEqual(
            error(header + #"{"id": "a", "when": {"coaching": ["low"]}, "action": "block"}"#),
            "line 2: when.coaching: must be a non-empty array of unknown, medium, high, none; \"low\" is unknown")
        XCTAssertEqual(
            error(header + #"{"id": "a", "when": {"coaching": []}, "action": "block"}"#),
            "line 2: when.coaching: must be a non-empty array of unknown, medium, high, none")
        XCTAssertEqual(
            error(header + #"{"id": "a", "when": {"sideEffects": ["teleport"]}, "action": "block"}"#),
            "line 2: when.sideEffects: must be true (any), false (none) or a non-empty array of financial, externalCommunication, destructive, persistentStorage, sensitiveDataAccess, deviceControl"
        )
        XCTAssertEqual(
            error(header + #"{"id": "a", "when": {"userRequested": "no"}, "action": "block"}"#),
            "line 2: when.userRequested: must be true or false")
        XCTAssertEqual(
            error(header + #"{"id": "a", "when": {"initiator": "robot"}, "action": "block"}"#),
            "line 2: when.initiator: must be \"person\" or \"agent\"")
        XCTAssertEqual(error(header + #"{"id": "a", "when": [], "action": "block"}"#), "line 2: when: must be an object of facts")
        XCTAssertEqual(error(header + #"{"id": "a", "action": "block""#).prefix(27), "line 2: not a JSON object: ")
        XCTAssertEqual(error(header + "[1]"), "line 2: must be a JSON object, not an array")
        XCTAssertEqual(
            error(#"{"id": "a", "action": "block"}"#),
            "line 1: the first object is the header, whose only member is policyVersion; \"id\" is unknown")
        XCTAssertEqual(error(#"{"policyVersion": "has space"}"#), "line 1: policyVersion must be 1 to 64 letters, digits, '.', '_' or '-'")
        XCTAssertEqual(error("# only a comment\n"), "line 2: no header {\"policyVersion\": \"…\"} before the end of the file")
        XCTAssertEqual(error(header + String(repeating: " ", count: 5000) + "{}"), "line 2: longer than 4096 bytes")
        let many = (0...DecisionPolicy.maxRules).map { #"{"id": "r\#($0)", "action": "proceed"}"# }.joined(separator: "\n")
        XCTAssertEqual(error(header + many), "line \(DecisionPolicy.maxRules + 2): more than \(DecisionPolicy.maxRules) rules")
        XCTAssertEqual(error(header + "\r\n" + #"{"id": "a", "action": "block"}"# + "\r\n"), "accepted", "CRLF line ends")
        // Limits that comments do not escape, and a policy that says nothing.
        XCTAssertEqual(
            error(header + "# " + String(repeating: "x", count: 5000) + "\n" + #"{"id": "a", "action": "block"}"#),
            "line 2: longer than 4096 bytes")
        let comments = String(repeating: "# " + String(repeating: "x", count: 1000) + "\n", count: 1100)
        XCTAssertEqual(error(header + comments + #"{"id": "a", "action": "block"}"#), "larger than 1048576 bytes (comment lines included)")
        XCTAssertEqual(
            error(header),
            "line 2: no rule after the header; a policy needs at least one (to proceed always, say so: {\"id\": \"always\", \"action\": \"proceed\"})"
        )
        XCTAssertTrue(error(header + "# rules to come\n").hasPrefix("line 3: no rule after the header"))
    }
}
