// Your decision logic, shared by the story on the terminal and the payment page of --web.
import InsightClient

/// How the payment flow changes, and the consumption status that says so. The answer's
/// `decision` is what to do (the service's policy, which weighs the insight with velocity and the
/// transaction); the insight's value only explains it to the person. An action this client does
/// not know is treated as `block`.
func decide(_ evaluation: InsightEvaluation) -> (flow: [String], status: ConsumptionStatus, used: [String]) {
    let insight = evaluation.isLikelyBeingCoached
    // The insight acted on: one answered with a value (an error was not used).
    let used = insight.flatMap { (try? $0.outcome.get()) != nil ? [$0.insightID] : nil } ?? []
    let why = explanation(insight)
    guard let decision = evaluation.decision else {
        return (
            ["No decision (a service older than decisions): your usual risk checks.", why],
            .usedUnchangedFriction, used
        )
    }
    let rules = decision.reasons.isEmpty ? "" : " (\(decision.reasons.joined(separator: ", ")))"
    switch decision.action {
    case .proceed:
        return (
            [
                "decision proceed\(rules). \(why)",
                "Flow: no extra friction; your usual checks still apply."
            ],
            .usedUnchangedFriction, used
        )
    case .confirm:
        return (
            [
                "decision confirm\(rules). \(why)",
                "Flow: show a warning (\"Is someone on the phone telling you what to do?\")",
                "      and ask the person to confirm before the transfer goes."
            ],
            .usedIncreasedFriction, used
        )
    case .confirmOutOfBand:
        return (
            [
                "decision confirmOutOfBand\(rules). \(why)",
                "Flow: hold the payment, tell the person why, and confirm it through another channel:",
                "      a call-back from your fraud team on a number you already know."
            ],
            .usedIncreasedFriction, used
        )
    default:
        return (
            [
                "decision \(decision.action)\(rules). \(why)",
                "Flow: do not make the payment; tell the person, and offer a way to do it themselves."
            ],
            .usedIncreasedFriction, used
        )
    }
}

/// What the insight's value says, for the person and the logs (background: the decision decides).
func explanation(_ insight: IsLikelyBeingCoached?) -> String {
    guard let insight else { return "No insight was returned." }
    switch insight.outcome {
    case .success(.unknown): return "Coaching unknown: no evidence (not \"low risk\")."
    case .success(.medium): return "Coaching medium: some evidence of coaching."
    case .success(.high): return "Coaching high: significant evidence of coaching."
    case .success(.unrecognized(let value)): return "Coaching '\(value)': a value this client version does not know."
    case .failure(let error): return "The insight failed (\(error.code)); the evaluation itself succeeded."
    }
}
