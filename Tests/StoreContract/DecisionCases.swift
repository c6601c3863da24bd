import InsightDomain

// The decision stored with each evaluation (docs/decisions.md) and `DecisionReporting`: the
// decision read back, and consumption reports counted against it per caller.

extension StoreContract {
    static var decisionCases: [ContractCase] {
        [
            contractCase(.decisions, "an evaluation's decision is stored with it and read back whole") { s in
                try s.caller("c1")
                let decided = Decision(
                    action: .confirmOutOfBand, reasons: ["coachingHigh", "agentArguments"],
                    policyVersion: "bank-7")
                try s.record("e1", decision: decided)
                try s.record("e2", decision: Decision(action: .proceed, reasons: [], policyVersion: "default-1"))
                try s.record("e3")
                try expectEqual(try s.decisions.storedDecision(eventId: "e1"), decided, "e1")
                try expectEqual(
                    try s.decisions.storedDecision(eventId: "e2"),
                    Decision(action: .proceed, reasons: [], policyVersion: "default-1"), "no reasons")
                try expectEqual(try s.decisions.storedDecision(eventId: "e3"), nil, "an evaluation without a decision")
                try expectEqual(try s.decisions.storedDecision(eventId: "missing"), nil, "no such evaluation")
                try expectEqual(try s.decisions.storedDecision(eventId: "e\u{0}1"), nil, "an id holding a NUL")
            },
            contractCase(.decisions, "decisions are counted per caller of the tenant, action and reported status") { s in
                try s.caller("c1")
                try s.caller("c2", environment: .sandbox)
                try s.caller("x1", tenant: "other")
                func decision(_ action: DecisionAction) -> Decision {
                    Decision(action: action, reasons: ["r"], policyVersion: "v")
                }
                try s.record("e1", created: 1_000, decision: decision(.block))
                try s.record("e2", created: 1_100, decision: decision(.block))
                try s.record("e3", created: 1_200, decision: decision(.block))
                try s.record("e4", created: 1_300, decision: decision(.confirm))
                try s.record("e5", created: 1_400, decision: decision(.proceed))
                try s.record("e6", created: 1_500)
                try s.record("e7", caller: "c2", environment: .sandbox, created: 1_600, decision: decision(.confirmOutOfBand))
                try s.record("e8", caller: "x1", created: 1_700, decision: decision(.block))
                try s.record("e9", created: 9_000, decision: decision(.block))
                try expectEqual(try s.report("e1", status: .usedUnchangedFriction), .recorded(.onTime), "e1")
                try expectEqual(try s.report("e2", status: .usedUnchangedFriction), .recorded(.onTime), "e2")
                try expectEqual(try s.report("e4", status: .usedIncreasedFriction), .recorded(.onTime), "e4")
                try expectEqual(try s.report("e6", status: .usedReducedFriction), .recorded(.onTime), "e6")
                try expectEqual(try s.report("e8", caller: "x1", status: .usedUnchangedFriction), .recorded(.onTime), "e8")
                let counts = Set(try s.decisions.decisionCounts(tenant: Tenant.defaultName, from: 1_000, to: 9_000))
                try expectEqual(
                    counts,
                    [
                        DecisionCount(callerId: "c1", action: .block, status: .usedUnchangedFriction, evaluations: 2),
                        DecisionCount(callerId: "c1", action: .block, status: nil, evaluations: 1),
                        DecisionCount(callerId: "c1", action: .confirm, status: .usedIncreasedFriction, evaluations: 1),
                        DecisionCount(callerId: "c1", action: .proceed, status: nil, evaluations: 1),
                        DecisionCount(callerId: "c2", action: .confirmOutOfBand, status: nil, evaluations: 1)
                    ], "the default tenant's counts (e6 has no decision, e9 is outside the period)")
                try expectEqual(
                    Set(try s.decisions.decisionCounts(tenant: "other", from: 0, to: 10_000)),
                    [DecisionCount(callerId: "x1", action: .block, status: .usedUnchangedFriction, evaluations: 1)],
                    "another tenant's")
                try expectEqual(try s.decisions.decisionCounts(tenant: "nobody", from: 0, to: 10_000), [], "a tenant without callers")
                try expectEqual(
                    Set(try s.decisions.decisionCounts(tenant: Tenant.defaultName, from: 1_100, to: 1_300)),
                    [
                        DecisionCount(callerId: "c1", action: .block, status: .usedUnchangedFriction, evaluations: 1),
                        DecisionCount(callerId: "c1", action: .block, status: nil, evaluations: 1)
                    ],
                    "from is inclusive, to exclusive")
            },
            contractCase(.decisions, "decisions are counted by the intervention reported and the person's response") { s in
                try s.caller("c1")
                _ = try s.addTemplate("w-romance")
                let block = Decision(action: .block, reasons: ["r"], policyVersion: "v")
                for id in ["e1", "e2", "e3", "e4", "e5"] { try s.record(id, decision: block) }
                try expectEqual(try s.report("e1", intervention: warning(response: .abandoned)), .recorded(.onTime))
                try expectEqual(try s.report("e2", intervention: warning(response: .abandoned)), .recorded(.onTime))
                try expectEqual(try s.report("e3", intervention: warning(response: .proceeded)), .recorded(.onTime))
                try expectEqual(try s.report("e4", intervention: RecordedIntervention(kind: .none)), .recorded(.onTime))
                try expectEqual(try s.report("e5"), .recorded(.onTime))
                let f = ConsumptionStatus.usedIncreasedFriction
                try expectEqual(
                    Set(try s.decisions.decisionCounts(tenant: Tenant.defaultName, from: 0, to: 10_000)),
                    [
                        DecisionCount(
                            callerId: "c1", action: .block, status: f, intervention: .scamWarning, response: .abandoned, evaluations: 2),
                        DecisionCount(
                            callerId: "c1", action: .block, status: f, intervention: .scamWarning, response: .proceeded, evaluations: 1),
                        DecisionCount(callerId: "c1", action: .block, status: f, intervention: InterventionKind.none, evaluations: 1),
                        DecisionCount(callerId: "c1", action: .block, status: f, evaluations: 1)
                    ])
            }
        ]
    }
}
