import InsightDomain
import Locking

/// The decision policy in force and its shadow, replaceable at run time (SIGHUP) without
/// dropping requests: each evaluation takes one snapshot and decides with it.
public final class DecisionPolicies: Sendable {
    /// The policies of one moment.
    public struct Snapshot: Sendable {
        public var live: DecisionPolicy
        /// Evaluated beside `live`, counted, never returned or stored.
        public var shadow: DecisionPolicy?

        public init(live: DecisionPolicy, shadow: DecisionPolicy? = nil) {
            self.live = live
            self.shadow = shadow
        }
    }

    private let current: Locked<Snapshot>

    public init(_ snapshot: Snapshot = Snapshot(live: .defaults)) { current = Locked(snapshot) }

    /// Swaps in newly loaded policies.
    public func replace(_ snapshot: Snapshot) { current.withLock { $0 = snapshot } }

    public var snapshot: Snapshot { current.withLock { $0 } }
}

extension DecisionFacts {
    /// The facts of an evaluation: its final coaching value (the highest answered, after
    /// velocity), the velocity rules among its coaching insights' reasons, its category, and the
    /// request's `transaction` and `initiator`.
    init(_ request: EvaluationRequest, insights: [InsightRecord], coaching: InsightValue?) {
        var velocity = CaseSet<VelocityRule.Kind>()
        for insight in insights {
            guard case .value(_, let reasons) = insight.outcome, insight.type == InsightType.isLikelyBeingCoached.rawValue else { continue }
            for reason in reasons {
                if let kind = Self.velocityKinds[reason] { velocity.insert(kind) }
            }
        }
        self.init(
            coaching: coaching, velocity: velocity, category: request.category,
            newCounterparty: request.transaction.newCounterparty ?? false,
            amountBand: request.transaction.amountBand, initiator: request.initiator)
    }

    /// The velocity rules by name. A hashed look-up: `Kind(rawValue:)` compares a reason with
    /// every rule's name in turn, and most reasons (the model's) are none of them.
    private static let velocityKinds = Dictionary(uniqueKeysWithValues: VelocityRule.Kind.allCases.map { ($0.rawValue, $0) })
}
