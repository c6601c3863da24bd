// Your decision logic, shared by the story on the terminal and the payment page of --web.
import InsightClient

/// How the payment flow changes with the insight, and the consumption status that says so.
/// The insight is one input among your others: it adds friction, it never blocks on its own.
func decide(_ insight: IsLikelyBeingCoached?) -> (flow: [String], status: ConsumptionStatus, used: [String]) {
    guard let insight else {
        return (["No insight was returned: run your usual risk checks."], .notUsedError, [])
    }
    switch insight.outcome {
    case .success(.unknown):
        return (["unknown = no evidence of coaching (not \"low risk\").",
                 "Flow: no extra friction from this insight; your usual checks still apply."],
                .usedUnchangedFriction, [insight.insightID])
    case .success(.medium):
        return (["medium = some evidence of coaching.",
                 "Flow: show a warning (\"Is someone on the phone telling you what to do?\")",
                 "      and delay the transfer, e.g. 4 hours, so the person can think it over."],
                .usedIncreasedFriction, [insight.insightID])
    case .success(.high):
        return (["high = significant evidence of coaching.",
                 "Flow: inform the person of the risk before anything else, hold the payment,",
                 "      and offer a call-back from your fraud team on a number you already know."],
                .usedIncreasedFriction, [insight.insightID])
    case .success(.unrecognized(let value)):
        return (["'\(value)' is a value this client version does not know.",
                 "Flow: treat it like an error: your usual risk checks, nothing more."],
                .notUsedError, [])
    case .failure(let error):
        return (["The insight failed (\(error.code)); the evaluation itself succeeded.",
                 "Flow: your usual risk checks; do not read an error as \"no risk\"."],
                .notUsedError, [])
    }
}

