import InsightDomain
import InsightServices
import JSON

/// One case of `insightctl policy test` (docs/operations.md): the facts an evaluation gives the
/// decision policy, written as JSON, with what the case expects. `transaction` and `initiator`
/// are read by the evaluation API's own schema, so a case says them exactly as a request would.
public struct DecisionCase: Sendable {
    public var facts: DecisionFacts
    /// The action the case expects, if it names one.
    public var expect: DecisionAction?
    /// The reasons the case expects, if it names them.
    public var expectReasons: [String]?

    static let members = ["coaching", "velocity", "category", "transaction", "initiator", "expect", "expectReasons"]

    /// Reads a case from one JSON object; a problem names the offending field.
    public static func parse(_ bytes: [UInt8]) throws(Problem) -> DecisionCase {
        let root = try ObjectReader(try Problem.parseBody(bytes), path: "", allowed: members)
        var velocity = CaseSet<VelocityRule.Kind>()
        if let values = try root.array("velocity", count: 0...VelocityRule.Kind.allCases.count) {
            for (i, value) in values.enumerated() {
                guard case .string(let name) = value, let kind = VelocityRule.Kind(rawValue: name) else {
                    throw Problem.invalid(
                        "velocity[\(i)]", "must be one of \(VelocityRule.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                velocity.insert(kind)
            }
        }
        var transaction = TransactionFacts()
        if let value = root.value("transaction") { transaction = try EvaluationSchema.transaction.decode(value, path: "transaction") }
        var initiator = Initiator()
        if let value = root.value("initiator") { initiator = try EvaluationSchema.initiator.decode(value, path: "initiator") }
        var expectReasons: [String]?
        if let values = try root.array("expectReasons", count: 0...DecisionPolicy.maxRules) {
            expectReasons = try values.enumerated().map { i, value throws(Problem) in
                guard case .string(let reason) = value else { throw Problem.invalid("expectReasons[\(i)]", "must be a string") }
                return reason
            }
        }
        let facts = DecisionFacts(
            coaching: try root.enumeration("coaching", InsightValue.self), velocity: velocity,
            category: try root.enumeration("category", OperationCategory.self) ?? .payment,
            newCounterparty: transaction.newCounterparty ?? false, amountBand: transaction.amountBand,
            initiator: initiator)
        return DecisionCase(facts: facts, expect: try root.enumeration("expect", DecisionAction.self), expectReasons: expectReasons)
    }

    /// Whether `decision` is what the case expects (true when it expects nothing).
    public func accepts(_ decision: Decision) -> Bool {
        (expect.map { $0 == decision.action } ?? true) && (expectReasons.map { $0 == decision.reasons } ?? true)
    }
}
