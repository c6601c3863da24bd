import InsightDomain

// Shadow model versions and score bins (docs/operations.md "Shadow versions", migration 0015):
// shadow answers are stored after the served insights, reported with their role, labelled only
// through their evaluation's served insight, never shown, and deleted with their evaluation.

extension StoreSet {
    /// Stores an evaluation with ids made from its event id (`EvaluationIdentifiers`): served
    /// insights (model version, value, score bin) and shadow answers after them. Answers the ids
    /// of both.
    @discardableResult
    func shadowed(
        created: Milliseconds, caller: String = "c1", category: OperationCategory = .payment,
        account: [UInt8]? = [7], served: [(version: String, value: InsightValue, bin: Int?)],
        shadows: [(version: String, value: InsightValue, bin: Int?)],
        line: UInt = #line
    ) throws -> (eventId: String, served: [String], shadows: [String]) {
        let ids = EvaluationIdentifiers.make(insights: served.count, milliseconds: created)
        let shadowIds = shadows.indices.map {
            EvaluationIdentifiers.insightId(eventId: ids.eventId, position: EvaluationRecord.maxServedInsights + $0)!
        }
        func record(_ id: String, _ answer: (version: String, value: InsightValue, bin: Int?)) -> InsightRecord {
            InsightRecord(
                insightId: id, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: answer.version,
                newestModelVersion: "2.0", outcome: .value(answer.value, reasons: []), scoreBin: answer.bin)
        }
        let evaluation = EvaluationRecord(
            eventId: ids.eventId, callerId: caller, environment: .production, category: category, createdAt: created,
            reportConsumptionBy: created + 1_000, subject: HashedSubject(account: account, keyId: "k1"),
            insights: zip(ids.insightIds, served).map(record), shadowInsights: zip(shadowIds, shadows).map(record))
        try value(line: line) { ledger.record(evaluation, answer: Array(evaluation.eventId.utf8), completion: $0) }
        return (ids.eventId, ids.insightIds, shadowIds)
    }
}

func shadowCell(
    _ version: String, _ category: OperationCategory = .payment, _ value: InsightValue,
    _ consumption: ConsumptionStatus? = nil, _ label: LabelOutcome? = nil, count: Int = 1,
    shadow: Bool = true, bin: Int? = nil
) -> ModelPerformanceCell {
    ModelPerformanceCell(
        modelVersion: version, category: category, value: value, consumption: consumption, label: label,
        count: count, mature: 0, shadow: shadow, scoreBin: bin)
}

let shadowCases: [ContractCase] = [
    contractCase(.performance, "shadow answers are counted apart, with their bins and the label of the served insight") { s in
        try s.caller("c1")
        try s.caller("ops", roles: [.labels])
        let a = try s.shadowed(created: 1_000, served: [("2.0", .high, 9)], shadows: [("3.0", .medium, 7), ("1.0", .unknown, nil)])
        let b = try s.shadowed(created: 2_000, served: [("2.0", .unknown, 2)], shadows: [("3.0", .high, 9), ("1.0", .unknown, 3)])
        let c = try s.shadowed(created: 3_000, category: .account, served: [("3.0", .high, 9)], shadows: [("1.0", .medium, 8)])
        _ = try s.report(a.eventId, status: .usedIncreasedFriction, ids: [a.served[0]])
        try expectEqual(
            try s.label([fraud(a.served[0]), fraud(b.served[0], .confirmedLegitimate)]),
            .processed([.accepted, .accepted], replayed: false))
        _ = c
        try expectEqual(
            try s.performance(),
            [
                shadowCell("1.0", .account, .medium, bin: 8),
                shadowCell("1.0", .payment, .unknown, .usedIncreasedFriction, .confirmedFraud),
                shadowCell("1.0", .payment, .unknown, nil, .confirmedLegitimate, bin: 3),
                shadowCell("2.0", .payment, .high, .usedIncreasedFriction, .confirmedFraud, shadow: false, bin: 9),
                shadowCell("2.0", .payment, .unknown, nil, .confirmedLegitimate, shadow: false, bin: 2),
                shadowCell("3.0", .account, .high, shadow: false, bin: 9),
                shadowCell("3.0", .payment, .high, nil, .confirmedLegitimate, bin: 9),
                shadowCell("3.0", .payment, .medium, .usedIncreasedFriction, .confirmedFraud, bin: 7)
            ].sorted { $0.sortKey < $1.sortKey })
    },
    contractCase(.labels, "a shadow answer's id is unknownInsight: labels name served insights only") { s in
        try s.caller("c1")
        try s.caller("ops", roles: [.labels])
        let a = try s.shadowed(created: 1_000, served: [("2.0", .high, 9)], shadows: [("3.0", .medium, 7)])
        try expectEqual(
            try s.label([fraud(a.shadows[0]), fraud(a.served[0])]),
            .processed([.unknownInsight, .accepted], replayed: false))
        try expectEqual(
            try s.label([fraud(a.shadows[0])], key: "k2", body: "b2"),
            .processed([.unknownInsight], replayed: false), "still unknown once the served one is labelled")
    },
    contractCase(.history, "the history shows the served insights, never the shadow answers") { s in
        try s.caller("c1")
        try s.shadowed(created: 1_000, account: [7], served: [("2.0", .high, 9)], shadows: [("3.0", .medium, 7), ("1.0", .unknown, 1)])
        let page = try s.page([[7]])
        try expectEqual(page.entries.count, 1)
        try expectEqual(
            page.entries.first?.insights,
            [
                SubjectHistoryInsight(
                    type: "isLikelyBeingCoached", modelVersion: "2.0",
                    outcome: .value(.high))
            ])
    },
    contractCase(.retention, "an evaluation's shadow answers go with it") { s in
        try s.caller("c1")
        try s.shadowed(created: 1_000, served: [("2.0", .high, 9)], shadows: [("3.0", .medium, 7)])
        try s.shadowed(created: 5_000, served: [("2.0", .unknown, 1)], shadows: [("3.0", .unknown, 2)])
        try expectEqual(try s.purgeAll(olderThan: 3_000), RetentionReport(evaluations: 1))
        try expectEqual(
            try s.performance(),
            [
                shadowCell("2.0", .payment, .unknown, shadow: false, bin: 1), shadowCell("3.0", .payment, .unknown, bin: 2)
            ])
    }
]
