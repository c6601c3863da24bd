import InsightDomain

// `ModelPerformanceSource` (docs/operations.md "Model performance"): what each model version
// answered, how it was used and how it was labelled, counted over a period.

extension StoreSet {
    /// Stores an evaluation whose insights answered `insights` (model version and value, nil for
    /// an error), with ids made from its event id (`EvaluationIdentifiers`) when `made`, else
    /// `<id>-i<position>`. Answers the insight ids.
    @discardableResult
    func scored(
        _ id: String, caller: String = "c1", environment: Environment = .production, created: Milliseconds,
        category: OperationCategory = .payment, insights: [(version: String?, value: InsightValue?)],
        type: String = "isLikelyBeingCoached", made: Bool = false, source: InteractionSource? = nil,
        line: UInt = #line
    ) throws -> (eventId: String, insightIds: [String]) {
        let ids: (eventId: String, insightIds: [String]) =
            made
            ? EvaluationIdentifiers.make(insights: insights.count, milliseconds: created)
            : (id, insights.indices.map { "\(id)-i\($0)" })
        let evaluation = EvaluationRecord(
            eventId: ids.eventId, callerId: caller, environment: environment, category: category, createdAt: created,
            reportConsumptionBy: created + 1_000, subject: HashedSubject(account: [1], device: nil, counterparty: nil, keyId: "k1"),
            insights: zip(insights, ids.insightIds).map { insight, insightId in
                InsightRecord(
                    insightId: insightId, type: type, schemaVersion: 1, modelVersion: insight.version,
                    newestModelVersion: nil,
                    outcome: insight.value.map { .value($0, reasons: []) } ?? .error(.insightEvaluationFailed, detail: "x"))
            }, source: source)
        try value(line: line) { ledger.record(evaluation, answer: Array(evaluation.eventId.utf8), completion: $0) }
        return ids
    }

    func performance(
        tenant: String = Tenant.defaultName, environment: Environment = .production, from: Milliseconds = 0,
        to: Milliseconds = 1_000_000, category: OperationCategory? = nil,
        matureBefore: Milliseconds = 0
    ) throws -> [ModelPerformanceCell] {
        ModelPerformanceCell.merged(
            try self.performance.modelPerformanceCounts(
                ModelPerformanceQuery(
                    tenant: tenant, environment: environment, from: from, to: to, category: category, matureBefore: matureBefore)))
    }
}

func cell(
    _ version: String, _ category: OperationCategory = .payment, _ value: InsightValue,
    _ consumption: ConsumptionStatus? = nil, _ label: LabelOutcome? = nil, count: Int = 1, mature: Int = 0,
    source: InteractionSource? = nil
) -> ModelPerformanceCell {
    ModelPerformanceCell(
        modelVersion: version, category: category, value: value, consumption: consumption, label: label,
        count: count, mature: mature, source: source)
}

let performanceCases: [ContractCase] = [
    contractCase(.performance, "each insight counted once by version, category, value, consumption and label") { s in
        try s.caller("c1")
        try s.caller("c2")
        try s.scored("e1", caller: "c1", created: 1_000, insights: [("2.0", .high), ("1.0", .medium)])
        try s.scored("e2", caller: "c2", created: 2_000, insights: [("2.0", .high)])
        try s.scored("e3", caller: "c1", created: 3_000, category: .account, insights: [("2.0", .unknown)])
        try s.scored("e4", caller: "c1", created: 4_000, insights: [("2.0", .high)])
        _ = try s.report("e1", caller: "c1", status: .usedIncreasedFriction, ids: ["e1-i0"], at: 1_500)
        _ = try s.report("e3", caller: "c1", status: .usedEvaluationOnly, at: 3_500)
        _ = try s.label([fraud("e1-i0"), fraud("e1-i1", .confirmedLegitimate), fraud("e3-i0"), fraud("e4-i0", .confirmedLegitimate)])
        try expectEqual(
            try s.performance(),
            [
                cell("1.0", .payment, .medium, .usedIncreasedFriction, .confirmedLegitimate),
                cell("2.0", .account, .unknown, .usedEvaluationOnly, .confirmedFraud),
                cell("2.0", .payment, .high, nil, nil),
                cell("2.0", .payment, .high, nil, .confirmedLegitimate),
                cell("2.0", .payment, .high, .usedIncreasedFriction, .confirmedFraud)
            ])
    },
    contractCase(.performance, "the period is [from, to), a category narrows it, maturity counts what is older than the cutoff") { s in
        try s.caller("c1")
        for (i, created) in [999, 1_000, 1_500, 1_999, 2_000].enumerated() {
            try s.scored("e\(i)", created: Milliseconds(created), category: i == 2 ? .account : .payment, insights: [("2.0", .high)])
        }
        try expectEqual(
            try s.performance(from: 1_000, to: 2_000, matureBefore: 1_500),
            [
                cell("2.0", .account, .high, mature: 0), cell("2.0", .payment, .high, count: 2, mature: 1)
            ])
        try expectEqual(
            try s.performance(from: 1_000, to: 2_000, category: .payment, matureBefore: 10_000),
            [
                cell("2.0", .payment, .high, count: 2, mature: 2)
            ])
        try expectEqual(try s.performance(from: 2_001, to: 5_000), [])
    },
    contractCase(.performance, "only the tenant's callers of the environment, only coaching values with a version") { s in
        try s.caller("c1")
        try s.caller("a1", tenant: "acme")
        try s.caller("s1", environment: .sandbox)
        try s.scored("mine", caller: "c1", created: 1_000, insights: [("2.0", .medium), ("2.0", nil), (nil, .high)])
        try s.scored("other type", caller: "c1", created: 1_000, insights: [("2.0", .high)], type: "unknownType")
        try s.scored("acme", caller: "a1", created: 1_000, insights: [("2.0", .high)])
        try s.scored("sandbox", caller: "s1", environment: .sandbox, created: 1_000, insights: [("2.0", .unknown)])
        try s.scored("ghost", caller: "gone", created: 1_000, insights: [("2.0", .high)])
        try expectEqual(try s.performance(), [cell("2.0", .payment, .medium)])
        try expectEqual(try s.performance(tenant: "acme"), [cell("2.0", .payment, .high)])
        try expectEqual(try s.performance(environment: .sandbox), [cell("2.0", .payment, .unknown)])
        try expectEqual(try s.performance(tenant: "nobody"), [])
    },
    contractCase(.performance, "labels find insights whose ids were made from the event id") { s in
        try s.caller("c1")
        let made = try s.scored("", created: 1_000, insights: [("2.0", .high), ("1.0", .medium), ("3.0", .unknown)], made: true)
        _ = try s.report(made.eventId, status: .usedReducedFriction, ids: [made.insightIds[1]])
        _ = try s.label([fraud(made.insightIds[0]), fraud(made.insightIds[2], .confirmedLegitimate)])
        try expectEqual(
            try s.performance(),
            [
                cell("1.0", .payment, .medium, .usedReducedFriction, nil),
                cell("2.0", .payment, .high, .usedReducedFriction, .confirmedFraud),
                cell("3.0", .payment, .unknown, .usedReducedFriction, .confirmedLegitimate)
            ])
    },
    contractCase(.performance, "each evaluation's capture kit is kept with it and splits the counts") { s in
        try s.caller("c1")
        let web1 = InteractionSource(kit: "insight-capture-web", version: "1.0.0", platform: .web)
        let web2 = InteractionSource(kit: "insight-capture-web", version: "1.1.0-beta.1+b7", platform: .web)
        let ios = InteractionSource(kit: "insight-capture-web", version: "1.0.0", platform: .ios)
        try s.scored("e1", created: 1_000, insights: [("2.0", .high)], source: web1)
        try s.scored("e2", created: 1_100, insights: [("2.0", .high)], source: web1)
        try s.scored("e3", created: 1_200, insights: [("2.0", .high)], source: web2)
        try s.scored("e4", created: 1_300, insights: [("2.0", .high)], source: ios)
        try s.scored("e5", created: 1_400, insights: [("2.0", .high)])
        _ = try s.label([fraud("e3-i0")])
        try expectEqual(
            try s.performance(),
            [
                cell("2.0", .payment, .high),
                cell("2.0", .payment, .high, source: ios),
                cell("2.0", .payment, .high, count: 2, source: web1),
                cell("2.0", .payment, .high, nil, .confirmedFraud, source: web2)
            ])
    }
]
