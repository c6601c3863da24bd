import InsightDomain

// Interventions (docs/api.md "Interventions"): each tenant's catalogue per environment, and the
// intervention a consumption report records, checked against it and the evaluation's times.

extension StoreSet {
    func addTemplate(
        _ id: String, version: Int = 1, kind: InterventionKind = .scamWarning, scamTypes: [ScamType] = [.romance],
        description: String = "Romance scam warning", tenant: String = Tenant.defaultName,
        environment: Environment = .production, at: Milliseconds = 500, line: UInt = #line
    ) throws -> TemplateAddResult {
        let template = InterventionTemplate(
            tenant: tenant, environment: environment, id: id, version: version, kind: kind, scamTypes: scamTypes,
            description: description, createdAt: at)
        return try value(line: line) { interventions.add(template, completion: $0) }
    }

    func retireTemplate(
        _ id: String, version: Int = 1, tenant: String = Tenant.defaultName, environment: Environment = .production,
        at: Milliseconds, line: UInt = #line
    ) throws -> InterventionTemplate? {
        try value(line: line) {
            interventions.retire(
                tenant: tenant, environment: environment, reference: TemplateReference(id: id, version: version), at: at,
                completion: $0)
        }
    }
}

/// A warning of template `id` shown at `shown`, answered `response`.
func warning(_ id: String = "w-romance", version: Int = 1, shown: Milliseconds = 1_200, response: InterventionResponse = .abandoned)
    -> RecordedIntervention
{
    RecordedIntervention(
        kind: .scamWarning, template: TemplateReference(id: id, version: version), shownAt: shown, response: response)
}

let interventionCases: [ContractCase] = [
    contractCase(.interventions, "an entry is added once; the same again is unchanged, other content a conflict") { s in
        guard case .added(let added) = try s.addTemplate("w-romance", scamTypes: [.romance, .purchase]) else {
            throw ContractFailure(description: "not added")
        }
        try expectEqual(added.scamTypes, [.purchase, .romance], "in the vocabulary's order")
        try expectEqual(try s.addTemplate("w-romance", scamTypes: [.purchase, .romance], at: 900), .unchanged(added))
        try expectEqual(try s.addTemplate("w-romance", description: "Other words", at: 900), .conflict(added))
        try expectEqual(try s.addTemplate("w-romance", kind: .questionnaire), .conflict(added))
        guard case .added = try s.addTemplate("w-romance", version: 2) else { throw ContractFailure(description: "v2 not added") }
        try expectEqual(
            try s.interventions.templates(tenant: Tenant.defaultName, environment: .production).map(\.reference),
            [TemplateReference(id: "w-romance", version: 1), TemplateReference(id: "w-romance", version: 2)])
    },
    contractCase(.interventions, "catalogues are per tenant and environment") { s in
        _ = try s.addTemplate("w-a")
        _ = try s.addTemplate("w-b", tenant: "acme")
        _ = try s.addTemplate("w-c", environment: .sandbox)
        try expectEqual(try s.interventions.templates(tenant: Tenant.defaultName, environment: .production).map(\.id), ["w-a"])
        try expectEqual(try s.interventions.templates(tenant: "acme", environment: .production).map(\.id), ["w-b"])
        try expectEqual(try s.interventions.templates(tenant: Tenant.defaultName, environment: .sandbox).map(\.id), ["w-c"])
        try expectEqual(try s.retireTemplate("w-b", at: 700), nil, "another tenant's entry is not found")
    },
    contractCase(.interventions, "retiring keeps the entry and its first time") { s in
        _ = try s.addTemplate("w-romance")
        try expectEqual(try s.retireTemplate("w-romance", at: 700)?.retiredAt, 700)
        try expectEqual(try s.retireTemplate("w-romance", at: 900)?.retiredAt, 700, "retired before")
        try expectEqual(try s.retireTemplate("w-romance", version: 2, at: 900), nil)
        try expectEqual(
            try s.interventions.templates(tenant: Tenant.defaultName, environment: .production).map(\.retiredAt), [700])
    },
    contractCase(.interventions, "a report records its intervention; the same again is alreadyRecorded, another a conflict") { s in
        _ = try s.addTemplate("w-romance")
        try s.record("e1")
        try s.record("e2")
        try expectEqual(try s.report("e1", intervention: warning()), .recorded(.onTime))
        try expectEqual(try s.report("e1", at: 3_000, intervention: warning()), .alreadyRecorded)
        try expectEqual(
            try s.report("e1", intervention: warning(response: .proceeded)), .conflict(existing: .usedIncreasedFriction),
            "another response")
        try expectEqual(
            try s.report("e1", intervention: warning(shown: 1_300)), .conflict(existing: .usedIncreasedFriction), "shown later")
        try expectEqual(try s.report("e1"), .conflict(existing: .usedIncreasedFriction), "no intervention")
        try expectEqual(try s.report("e2"), .recorded(.onTime))
        try expectEqual(try s.report("e2", intervention: warning()), .conflict(existing: .usedIncreasedFriction), "one added later")
        try expectEqual(try s.report("e2"), .alreadyRecorded)
    },
    contractCase(.interventions, "a hold, a none and a call back without a template are recorded and compared whole") { s in
        try s.record("e1")
        try s.record("e2")
        try s.record("e3")
        let hold = RecordedIntervention(
            kind: .hold, shownAt: 1_100, response: .released,
            hold: InterventionHold(startedAt: 1_100, endedAt: 1_400, toldAt: 1_150))
        try expectEqual(try s.report("e1", intervention: hold), .recorded(.onTime))
        var later = hold
        later.hold?.endedAt = 1_450
        try expectEqual(try s.report("e1", intervention: later), .conflict(existing: .usedIncreasedFriction), "another end")
        try expectEqual(try s.report("e1", intervention: hold), .alreadyRecorded)
        try expectEqual(try s.report("e2", intervention: RecordedIntervention(kind: .none)), .recorded(.onTime))
        try expectEqual(try s.report("e2"), .conflict(existing: .usedIncreasedFriction), "none is not no intervention")
        let callBack = RecordedIntervention(kind: .callBack, shownAt: 1_100, response: .calledBack)
        try expectEqual(try s.report("e3", intervention: callBack), .recorded(.onTime))
        try expectEqual(try s.report("e3", intervention: callBack), .alreadyRecorded)
    },
    contractCase(.interventions, "an unknown template, another tenant's or environment's, is refused and nothing is stored") { s in
        _ = try s.addTemplate("w-acme", tenant: "acme")
        _ = try s.addTemplate("w-sandbox", environment: .sandbox)
        _ = try s.addTemplate("w-romance")
        try s.record("e1")
        try expectEqual(try s.report("e1", intervention: warning("w-none")), .interventionRefused(.unknownTemplate))
        try expectEqual(try s.report("e1", intervention: warning("w-romance", version: 2)), .interventionRefused(.unknownTemplate))
        try expectEqual(try s.report("e1", intervention: warning("w-acme")), .interventionRefused(.unknownTemplate), "another tenant's")
        try expectEqual(
            try s.report("e1", intervention: warning("w-sandbox")), .interventionRefused(.unknownTemplate), "another environment's")
        try expectEqual(try s.report("e1", intervention: warning()), .recorded(.onTime), "nothing was stored by the refusals")
    },
    contractCase(.interventions, "a template of another tenant is found for that tenant's reports") { s in
        _ = try s.addTemplate("w-acme", tenant: "acme")
        try s.record("e1")
        try expectEqual(try s.report("e1", tenant: "acme", intervention: warning("w-acme")), .recorded(.onTime))
    },
    contractCase(.interventions, "the kind must be the template's") { s in
        _ = try s.addTemplate("q-invest", kind: .questionnaire, scamTypes: [.investment])
        try s.record("e1")
        try expectEqual(
            try s.report("e1", intervention: warning("q-invest")), .interventionRefused(.kindMismatch(template: .questionnaire)))
        let questionnaire = RecordedIntervention(
            kind: .questionnaire, template: TemplateReference(id: "q-invest", version: 1), shownAt: 1_200, response: .abandoned)
        try expectEqual(try s.report("e1", intervention: questionnaire), .recorded(.onTime))
    },
    contractCase(.interventions, "a template retired before the intervention was shown is refused; shown before, accepted") { s in
        _ = try s.addTemplate("w-romance")
        _ = try s.retireTemplate("w-romance", at: 1_250)
        try s.record("e1")
        try s.record("e2")
        try expectEqual(try s.report("e1", intervention: warning(shown: 1_250)), .interventionRefused(.retired))
        try expectEqual(try s.report("e2", intervention: warning(shown: 1_249)), .recorded(.onTime))
    },
    contractCase(.interventions, "times before the evaluation or after the report, and a hold ending before it starts, are refused") {
        s in
        _ = try s.addTemplate("w-romance")
        try s.record("e1", created: 100_000, due: 200_000)
        let tolerance = RecordedIntervention.clockTolerance
        try expectEqual(
            try s.report("e1", at: 150_000, intervention: warning(shown: 100_000 - tolerance - 1)),
            .interventionRefused(.timeOutOfRange(field: "shownAt")), "before the evaluation")
        try expectEqual(
            try s.report("e1", at: 150_000, intervention: warning(shown: 150_000 + tolerance + 1)),
            .interventionRefused(.timeOutOfRange(field: "shownAt")), "after the report")
        let backwards = RecordedIntervention(
            kind: .hold, shownAt: 110_000, response: .released,
            hold: InterventionHold(startedAt: 120_000, endedAt: 119_999, toldAt: 120_000))
        try expectEqual(
            try s.report("e1", at: 150_000, intervention: backwards), .interventionRefused(.timeOutOfRange(field: "hold.endedAt")))
        let toldLate = RecordedIntervention(
            kind: .hold, shownAt: 110_000, response: .released,
            hold: InterventionHold(startedAt: 110_000, endedAt: 120_000, toldAt: 150_000 + tolerance + 1))
        try expectEqual(
            try s.report("e1", at: 150_000, intervention: toldLate), .interventionRefused(.timeOutOfRange(field: "hold.toldAt")))
        try expectEqual(
            try s.report("e1", at: 150_000, intervention: warning(shown: 100_000 - tolerance)), .recorded(.onTime),
            "within the clocks' tolerance")
    },
    contractCase(.interventions, "an intervention goes with its evaluation at retention") { s in
        _ = try s.addTemplate("w-romance")
        try s.record("e1")
        try expectEqual(try s.report("e1", intervention: warning()), .recorded(.onTime))
        try s.record("e2", created: 10_000_000, due: 10_001_000)
        _ = try value { s.retention.purgeBatch(olderThan: 5_000_000, completion: $0) }
        try expectEqual(try s.report("e1", intervention: warning()), .evaluationNotFound)
        try expectEqual(
            try s.interventions.templates(tenant: Tenant.defaultName, environment: .production).count, 1,
            "the catalogue is not the evaluations': it stays")
    }
]
