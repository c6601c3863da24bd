/// How callers' consumption reports compare with the decisions of their evaluations
/// (docs/decisions.md "Counting what callers did with decisions"): the store counts, per caller,
/// action and reported status, the evaluations that carry a decision.
public protocol DecisionReporting: Sendable {
    /// The evaluations of callers of `tenant` created in `from..<to` that carry a decision,
    /// counted by caller, action and consumption status (nil: not reported yet), in no order.
    func decisionCounts(tenant: String, from: Milliseconds, to: Milliseconds) throws -> [DecisionCount]

    /// The decision stored with the evaluation `eventId` (any caller's: the caller of this port
    /// checks who may see it); nil when there is no such evaluation or it has no decision.
    func storedDecision(eventId: String) throws -> Decision?
}

extension Decision {
    /// The decision of stored columns: the action's code, the comma-separated reasons (nil or
    /// empty: none) and the policy version; nil when the row has none this version can read.
    public static func stored(action code: Int?, reasons: String?, policyVersion: String?) -> Decision? {
        guard let code, let action = DecisionAction(code: code), let policyVersion else { return nil }
        return Decision(
            action: action, reasons: reasons.map { $0.split(separator: ",").map(String.init) } ?? [],
            policyVersion: policyVersion)
    }
}

/// One count of `DecisionReporting`.
public struct DecisionCount: Sendable, Hashable {
    public var callerId: String
    public var action: DecisionAction
    /// The consumption report's status; nil when there is none.
    public var status: ConsumptionStatus?
    /// The intervention the report recorded, and the person's response; nil when it recorded
    /// none (or there is no report). `none` has no response.
    public var intervention: InterventionKind?
    public var response: InterventionResponse?
    public var evaluations: Int

    public init(
        callerId: String, action: DecisionAction, status: ConsumptionStatus?, intervention: InterventionKind? = nil,
        response: InterventionResponse? = nil, evaluations: Int
    ) {
        self.callerId = callerId
        self.action = action
        self.status = status
        self.intervention = intervention
        self.response = response
        self.evaluations = evaluations
    }
}

extension ConsumptionStatus {
    /// Whether a report with this status says the caller went ahead with the operation without
    /// adding friction: `usedReducedFriction`, `usedUnchangedFriction` or `notUsedNotNeeded`.
    /// Where the decision was `confirm`, `confirmOutOfBand` or `block`, such a report is a
    /// caller proceeding against the policy. (`usedIncreasedFriction` followed it;
    /// `notUsedError` and `usedEvaluationOnly` say nothing either way.)
    public var proceeded: Bool {
        switch self {
        case .usedReducedFriction, .usedUnchangedFriction, .notUsedNotNeeded: return true
        case .usedIncreasedFriction, .notUsedError, .usedEvaluationOnly: return false
        }
    }
}
