import Dispatch
import InsightDomain
import Synchronization

// The cases of `StoreContract`, by area. Expectations are the API's (docs/api.md: consumption,
// labels, subject authorization, tenants; docs/rate-limits.md; docs/privacy.md: retention) as
// today's SQLite stores implement them.

let consumptionCases: [ContractCase] = [
    contractCase(.consumption, "a report by its deadline is on time, after it late") { s in
        try s.record("e1", insights: ["a", "b"])
        try s.record("e2")
        try s.record("e3")
        try expectEqual(try s.report("e1", ids: ["a"], at: 1_500), .recorded(.onTime))
        try expectEqual(try s.report("e2", at: 2_000), .recorded(.onTime), "at the deadline")
        try expectEqual(try s.report("e3", at: 2_001), .recorded(.late))
    },
    contractCase(.consumption, "the same report again is alreadyRecorded, its ids in any order") { s in
        try s.record("e1", insights: ["a", "b"])
        try expectEqual(try s.report("e1", ids: ["a", "b"]), .recorded(.onTime))
        try expectEqual(try s.report("e1", ids: ["b", "a"], at: 9_000), .alreadyRecorded)
    },
    contractCase(.consumption, "a different report is a conflict naming the stored status") { s in
        try s.record("e1", insights: ["a", "b"])
        try expectEqual(try s.report("e1", status: .usedIncreasedFriction, ids: ["a"]), .recorded(.onTime))
        try expectEqual(
            try s.report("e1", status: .notUsedNotNeeded, ids: ["a"]),
            .conflict(existing: .usedIncreasedFriction))
        try expectEqual(
            try s.report("e1", status: .usedIncreasedFriction, ids: ["a", "b"]),
            .conflict(existing: .usedIncreasedFriction))
    },
    contractCase(.consumption, "another caller's or environment's evaluation is evaluationNotFound") { s in
        try s.record("e1", caller: "c1")
        try s.record("s1", caller: "c1", environment: .sandbox)
        try expectEqual(try s.report("e1", caller: "c2"), .evaluationNotFound, "another caller")
        try expectEqual(try s.report("e1", environment: .sandbox), .evaluationNotFound, "another environment")
        try expectEqual(try s.report("s1"), .evaluationNotFound, "the sandbox's from production")
        try expectEqual(try s.report("missing"), .evaluationNotFound)
        try expectEqual(try s.report("e1"), .recorded(.onTime), "nothing was stored by the refusals")
    },
    contractCase(.consumption, "insight ids not of the evaluation are listed in order and nothing is stored") { s in
        try s.record("e1", insights: ["a", "b"])
        try s.record("e2", insights: ["c"])
        try expectEqual(try s.report("e1", ids: ["a", "z", "c"]), .unknownInsightIds(["z", "c"]))
        try expectEqual(try s.report("e1", status: .notUsedNotNeeded, ids: []), .recorded(.onTime))
    },
    contractCase(.consumption, "insight ids made from the event id are the evaluation's") { s in
        let made = EvaluationIdentifiers.make(insights: 2, milliseconds: 1_000)
        try s.record(made.eventId, insights: made.insightIds)
        try expectEqual(try s.report(made.eventId, ids: Array(made.insightIds.reversed())), .recorded(.onTime))
        let other = EvaluationIdentifiers.make(insights: 1, milliseconds: 1_000)
        try s.record(other.eventId, insights: other.insightIds)
        try expectEqual(
            try s.report(made.eventId, ids: other.insightIds), .unknownInsightIds(other.insightIds),
            "another evaluation's")
        let third = EvaluationIdentifiers.insightId(eventId: other.eventId, position: 1) ?? "?"
        try expectEqual(try s.report(other.eventId, ids: [third]), .unknownInsightIds([third]), "past its insights")
    },
    contractCase(.consumption, "of concurrent reports for one evaluation exactly one is recorded") { s in
        try s.record("e1", insights: ["a"])
        let ledger = s.ledger
        let results = Mutex<[Result<ConsumptionResult, StoreFailure>]>([])
        let done = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            done.enter()
            ledger.report(
                ConsumptionReport(
                    eventId: "e1", callerId: "c1", environment: .production,
                    status: i % 2 == 0 ? .usedIncreasedFriction : .notUsedNotNeeded,
                    insightIdsUsed: i % 2 == 0 ? ["a"] : [], reportedAt: 1_500)
            ) { result in
                results.withLock { $0.append(result) }
                done.leave()
            }
        }
        try expect(done.wait(timeout: .now() + 10) == .success, "every report completes")
        let all = results.withLock { $0 }
        try expectEqual(all.filter { $0 == .success(.recorded(.onTime)) }.count, 1, "recorded")
        try expect(
            all.allSatisfy { r in
                if case .success(.recorded) = r { return true }
                if case .success(.alreadyRecorded) = r { return true }
                if case .success(.conflict) = r { return true }
                return false
            }, "the others are alreadyRecorded or conflict: \(all)")
    },
    contractCase(.consumption, "an event id is stored once") { s in
        try s.record("e1", insights: ["a"], due: 2_000)
        let again = EvaluationRecord(
            eventId: "e1", callerId: "c1", environment: .production, category: .payment,
            createdAt: 1_000, reportConsumptionBy: 9_000, subject: HashedSubject(), insights: [])
        if case .success = try wait({ s.ledger.record(again, answer: [1], completion: $0) }) {
            throw ContractFailure(description: "a second evaluation e1 was stored")
        }
        try expectEqual(try s.report("e1", ids: ["a"], at: 3_000), .recorded(.late), "the first one stands")
    },
    contractCase(.consumption, "an evaluation holds at most \(EvaluationRecord.maxServedInsights) insights and as many shadow answers") {
        s in
        func evaluation(_ id: String, served: Int, shadows: Int) -> EvaluationRecord {
            func insight(_ insightId: String) -> InsightRecord {
                InsightRecord(
                    insightId: insightId, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                    newestModelVersion: nil, outcome: .value(.unknown, reasons: []))
            }
            return EvaluationRecord(
                eventId: id, callerId: "c1", environment: .production, category: .payment, createdAt: 1_000,
                reportConsumptionBy: 2_000, subject: HashedSubject(),
                insights: (0..<served).map { insight("\(id)-i\($0)") },
                shadowInsights: (0..<shadows).map { insight("\(id)-s\($0)") })
        }
        for (served, shadows) in [(EvaluationRecord.maxServedInsights + 1, 0), (1, EvaluationRecord.maxShadowInsights + 1)] {
            if case .success = try wait({ s.ledger.record(evaluation("e1", served: served, shadows: shadows), answer: [1], completion: $0) }
            ) {
                throw ContractFailure(description: "an evaluation of \(served) insights and \(shadows) shadow answers was stored")
            }
        }
        try expectEqual(try s.report("e1"), .evaluationNotFound)
        try value {
            s.ledger.record(
                evaluation(
                    "e2", served: EvaluationRecord.maxServedInsights,
                    shadows: EvaluationRecord.maxShadowInsights), answer: [2], completion: $0)
        }
        try expectEqual(try s.report("e2", ids: ["e2-s0"]), .unknownInsightIds(["e2-s0"]), "a shadow answer was never returned")
        try expectEqual(try s.report("e2", ids: ["e2-i\(EvaluationRecord.maxServedInsights - 1)"]), .recorded(.onTime))
    }
]

let labelCases: [ContractCase] = [
    contractCase(.labels, "each item is accepted, duplicate, conflict, unknownInsight or invalid") { s in
        try s.caller("ops", roles: [.labels])
        try s.record("e1", insights: ["a", "b"])
        try s.record("s1", environment: .sandbox, insights: ["s"])
        let items: [Label?] = [
            fraud("a"), fraud("a"), fraud("a", .confirmedLegitimate), fraud("s"), fraud("missing"),
            nil, fraud("b", .confirmedLegitimate)
        ]
        try expectEqual(
            try s.label(items),
            .processed(
                [
                    .accepted, .duplicate, .conflict, .unknownInsight, .unknownInsight, .invalid,
                    .accepted
                ], replayed: false))
        try expectEqual(
            try s.label([fraud("a"), fraud("b")], key: "k2", body: "b2"),
            .processed([.duplicate, .conflict], replayed: false), "stored labels, a new key")
    },
    contractCase(.labels, "a replay answers the first results; a key reused with another body is refused") { s in
        try s.caller("ops", roles: [.labels])
        try s.record("e1", insights: ["a"])
        let first = try s.label([fraud("a"), fraud("missing"), nil])
        try expectEqual(first, .processed([.accepted, .unknownInsight, .invalid], replayed: false))
        try s.record("e2", insights: ["missing"])  // would be accepted now, but a replay answers as before
        try expectEqual(
            try s.label([fraud("a"), fraud("missing"), nil], at: 9_000),
            .processed([.accepted, .unknownInsight, .invalid], replayed: true))
        try expectEqual(try s.label([fraud("a")], body: "other"), .idempotencyKeyReused)
    },
    contractCase(.labels, "of concurrent submissions with one key one is processed, the others replay it") { s in
        try s.caller("ops", roles: [.labels])
        try s.record("e1", insights: ["a"])
        let ledger = s.ledger
        let results = Mutex<[Result<LabelSubmissionResult, StoreFailure>]>([])
        let done = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            done.enter()
            ledger.submit(
                LabelSubmission(
                    callerId: "ops", environment: .production, items: [fraud("a")],
                    idempotencyKeyHash: Array("k1".utf8), bodyHash: Array("b1".utf8),
                    receivedAt: 5_000)
            ) { result in
                results.withLock { $0.append(result) }
                done.leave()
            }
        }
        try expect(done.wait(timeout: .now() + 10) == .success, "every submission completes")
        let all = results.withLock { $0 }
        try expectEqual(all.filter { $0 == .success(.processed([.accepted], replayed: false)) }.count, 1, "processed")
        try expectEqual(all.filter { $0 == .success(.processed([.accepted], replayed: true)) }.count, 15, "replayed")
    },
    contractCase(.labels, "idempotency keys are each caller's own") { s in
        try s.caller("ops", roles: [.labels])
        try s.caller("ops2", roles: [.labels])
        try s.record("e1", insights: ["a", "b"])
        try expectEqual(try s.label([fraud("a")], caller: "ops"), .processed([.accepted], replayed: false))
        try expectEqual(try s.label([fraud("b")], caller: "ops2", body: "other"), .processed([.accepted], replayed: false))
    },
    contractCase(.labels, "a submission that accepted nothing is not kept") { s in
        try s.caller("ops", roles: [.labels])
        try s.record("e1", insights: ["a"])
        try expectEqual(try s.label([fraud("missing"), nil]), .processed([.unknownInsight, .invalid], replayed: false))
        try expectEqual(
            try s.label([fraud("a")], body: "other"), .processed([.accepted], replayed: false),
            "the key is free again")
        try expectEqual(try s.label([fraud("a")], key: "k2"), .processed([.duplicate], replayed: false))
        try expectEqual(
            try s.label([fraud("a")], key: "k2", body: "other"), .processed([.duplicate], replayed: false),
            "only duplicates: not kept either")
    },
    contractCase(.labels, "another tenant's insight is unknownInsight, even once it is labelled") { s in
        try s.caller("acme-eval", tenant: "acme")
        try s.caller("acme-ops", tenant: "acme", roles: [.labels])
        try s.caller("globex-ops", tenant: "globex", roles: [.labels])
        let made = EvaluationIdentifiers.make(insights: 1, milliseconds: 1_000)
        try s.record(made.eventId, caller: "acme-eval", insights: made.insightIds)
        try s.record("e2", caller: "acme-eval", insights: ["kept-id"])
        let ids = made.insightIds + ["kept-id"]
        try expectEqual(
            try s.label(ids.map { fraud($0) }, caller: "globex-ops", tenant: "globex"),
            .processed([.unknownInsight, .unknownInsight], replayed: false), "before acme labels")
        try expectEqual(
            try s.label(ids.map { fraud($0) }, caller: "acme-ops", tenant: "acme"),
            .processed([.accepted, .accepted], replayed: false))
        try expectEqual(
            try s.label(
                ids.map { fraud($0, .confirmedLegitimate) }, caller: "globex-ops", tenant: "globex",
                key: "k2"),
            .processed([.unknownInsight, .unknownInsight], replayed: false), "after acme labelled")
        try expectEqual(
            try s.label(ids.map { fraud($0) }, caller: "acme-ops", tenant: "acme", key: "k3"),
            .processed([.duplicate, .duplicate], replayed: false))
    },
    contractCase(.labels, "an insight is labelled in its evaluation's environment only") { s in
        try s.caller("ops", roles: [.labels])
        let made = EvaluationIdentifiers.make(insights: 1, milliseconds: 1_000)
        try s.record(made.eventId, environment: .sandbox, insights: made.insightIds)
        try s.record("e2", environment: .sandbox, insights: ["kept-id"])
        let past = EvaluationIdentifiers.insightId(eventId: made.eventId, position: 1) ?? "?"
        try expectEqual(
            try s.label([fraud(made.insightIds[0]), fraud("kept-id")]),
            .processed([.unknownInsight, .unknownInsight], replayed: false), "from production")
        try expectEqual(
            try s.label([fraud(made.insightIds[0]), fraud("kept-id"), fraud(past)], environment: .sandbox),
            .processed([.accepted, .accepted, .unknownInsight], replayed: false))
    }
]

let credentialCases: [ContractCase] = [
    contractCase(.credentials, "a key is found with its caller; unknown keys are not") { s in
        let (caller, key) = try s.caller("c1", tenant: "acme", environment: .sandbox, now: 10)
        try expectEqual(caller.tenant, "acme")
        let found = try s.credentials.credential(keyId: key.keyId)
        try expectEqual(found?.caller, caller)
        try expectEqual(found?.key.keyId, key.keyId)
        try expectEqual(found?.key.callerId, "c1")
        try expectEqual(found?.key.createdAt, 10)
        try expectEqual(found?.key.revokedAt, nil)
        try expect(found.map { key.matches($0.key.secretHash) } ?? false, "the stored hash matches the secret")
        try expect(found?.key.secretHash != Array(key.secret.utf8), "the secret itself is not stored")
        try expect(try s.credentials.credential(keyId: "0000000000000000") == nil, "an unknown key")
    },
    contractCase(.credentials, "a revoked key is found with its revocation time") { s in
        let (_, key) = try s.caller("c1")
        let second = try s.registration.issueKey(callerId: "c1", now: 15)
        try s.registration.revokeKey(keyId: key.keyId, now: 20)
        try expectEqual(try s.credentials.credential(keyId: key.keyId)?.key.revokedAt, 20)
        try expectEqual(try s.credentials.credential(keyId: second.keyId)?.key.revokedAt, nil, "the other key")
        try expectEqual(try s.credentials.credential(keyId: second.keyId)?.caller.callerId, "c1")
    }
]

let registrationCases: [ContractCase] = [
    contractCase(.registration, "invalid callers are refused") { s in
        try expectThrows("no roles") { try s.register(roles: []) }
        try expectThrows("a blank name") { try s.register(name: "  ") }
        try expectThrows("a long name") { try s.register(name: String(repeating: "n", count: 101)) }
        // Characters that would reorder or hide what a console, a table or a log shows around them.
        for (what, name) in [
            ("a right-to-left override", "pay\u{202E}stneme"), ("a left-to-right isolate", "pay\u{2066}x\u{2069}"),
            ("a zero-width joiner", "pay\u{200D}ments"), ("a newline", "pay\nments"), ("an escape", "pay\u{1B}[31m"),
            ("a carriage return", "payments\r"), ("a NUL", "pay\u{0}ments"), ("a line separator", "pay\u{2028}ments"),
            ("a delete", "pay\u{7F}")
        ] {
            try expectThrows(what) { try s.register(name: name) }
        }
        try expectThrows("rate 0") { try s.register(rate: 0) }
        try expectThrows("an infinite rate") { try s.register(rate: .infinity) }
        try expectThrows("burst 0") { try s.register(burst: 0) }
        try expectThrows("a tenant name with a space") { try s.register(tenant: "Acme Corp") }
        try expectThrows("an empty tenant name") { try s.register(tenant: "") }
        try expectEqual(try s.registration.list(tenant: nil), [], "nothing was stored")
        let (caller, _) = try s.register(name: "  payments  ")
        try expectEqual(caller.name, "payments", "the name is trimmed")
        try expectThrows("a taken caller id") { try s.register(name: "other") }
    },
    contractCase(.registration, "keys are issued to callers that exist and revoked once") { s in
        let (_, first) = try s.caller("c1", now: 1)
        let second = try s.registration.issueKey(callerId: "c1", now: 2)
        try expect(first.keyId != second.keyId, "a new key")
        try expectThrows("a key for an unknown caller") { try s.registration.issueKey(callerId: "nobody", now: 3) }
        try s.registration.revokeKey(keyId: first.keyId, now: 4)
        try expectThrows("a second revocation") { try s.registration.revokeKey(keyId: first.keyId, now: 5) }
        try expectThrows("an unknown key") { try s.registration.revokeKey(keyId: "0000000000000000", now: 5) }
        let keys = try s.registration.keys(callerId: "c1")
        try expectEqual(keys.map(\.keyId), [first.keyId, second.keyId], "oldest first")
        try expectEqual(keys.map(\.revokedAt), [4, nil])
        try expectEqual(try s.registration.keys(callerId: "nobody"), [])
    },
    contractCase(.registration, "callers are listed oldest first, by tenant, with the tenants' counts") { s in
        try s.caller("b", tenant: "acme", now: 5)
        try s.caller("a", tenant: "acme", environment: .sandbox, now: 5)
        try s.caller("z", tenant: "globex", now: 1)
        try s.caller("d", now: 3)
        try expectEqual(try s.registration.list(tenant: nil).map(\.callerId), ["z", "d", "a", "b"])
        try expectEqual(try s.registration.list(tenant: "acme").map(\.callerId), ["a", "b"])
        try expectEqual(try s.registration.list(tenant: "initech"), [])
        try expectEqual(try s.registration.caller("z", tenant: nil)?.tenant, "globex")
        try expectEqual(try s.registration.caller("z", tenant: "globex")?.callerId, "z")
        try expectEqual(try s.registration.caller("z", tenant: "acme"), nil, "another tenant's caller")
        let tenants = try s.registration.tenants()
        try expectEqual(tenants.map(\.name), ["acme", "default", "globex"])
        try expectEqual(tenants.map(\.production), [1, 1, 1])
        try expectEqual(tenants.map(\.sandbox), [1, 0, 0])
    }
]

let administrationCases: [ContractCase] = [
    contractCase(.administration, "a tenant sees only its callers") { s in
        let (acme, _) = try s.caller("a2", tenant: "acme", now: 2)
        try s.caller("a1", tenant: "acme", now: 1)
        try s.caller("g1", tenant: "globex", now: 1)
        try expectEqual(try s.administration.callers(tenant: "acme").map(\.callerId), ["a1", "a2"])
        try expectEqual(try s.administration.caller("a2", tenant: "acme"), acme)
        try expectEqual(try s.administration.caller("a2", tenant: "globex"), nil)
        try expectEqual(try s.administration.caller("nobody", tenant: "acme"), nil)
    },
    contractCase(.administration, "quotas change within the tenant only") { s in
        try s.caller("a1", tenant: "acme")
        let rate = try value { s.administration.updateQuota(callerId: "a1", tenant: "acme", rate: 50, burst: nil, completion: $0) }
        try expectEqual(rate?.rate, 50)
        try expectEqual(rate?.burst, 20, "burst left as it was")
        let burst = try value { s.administration.updateQuota(callerId: "a1", tenant: "acme", rate: nil, burst: 7, completion: $0) }
        try expectEqual(burst.map { [$0.rate, Double($0.burst)] }, [50, 7])
        let other = try value { s.administration.updateQuota(callerId: "a1", tenant: "globex", rate: 1, burst: 1, completion: $0) }
        try expectEqual(other, nil, "another tenant's caller")
        let missing = try value { s.administration.updateQuota(callerId: "nobody", tenant: "acme", rate: 1, burst: 1, completion: $0) }
        try expectEqual(missing, nil)
        let invalid = try wait { s.administration.updateQuota(callerId: "a1", tenant: "acme", rate: -1, burst: nil, completion: $0) }
        if case .success(let caller) = invalid {
            throw ContractFailure(description: "a negative rate was accepted: \(String(describing: caller))")
        }
        try expectEqual(
            try s.credentials.credential(keyId: try s.registration.keys(callerId: "a1")[0].keyId)?.caller.rate, 50,
            "the change is seen by authentication, the invalid one is not")
        try expectEqual(try s.administration.caller("a1", tenant: "acme")?.burst, 7)
    },
    contractCase(.administration, "a tenant's ceiling lowers its callers above it and caps every later change") { s in
        try s.caller("a1", tenant: "acme")
        try s.caller("g1", tenant: "globex")
        _ = try value { s.administration.updateQuota(callerId: "a1", tenant: "acme", rate: 500, burst: 900, completion: $0) }
        try expectEqual(try s.administration.ceiling(tenant: "acme"), TenantCeiling(), "no ceiling at first")
        try expectEqual(try s.registration.setCeiling(TenantCeiling(maxRate: 40, maxBurst: 80), tenant: "acme"), 1)
        try expectEqual(try s.registration.ceiling(tenant: "acme"), TenantCeiling(maxRate: 40, maxBurst: 80))
        try expectEqual(try s.administration.ceiling(tenant: "acme"), TenantCeiling(maxRate: 40, maxBurst: 80))
        try expectEqual(try s.administration.caller("a1", tenant: "acme").map { [$0.rate, Double($0.burst)] }, [40, 80])
        let capped = try value { s.administration.updateQuota(callerId: "a1", tenant: "acme", rate: 1000, burst: 5, completion: $0) }
        try expectEqual(capped.map { [$0.rate, Double($0.burst)] }, [40, 5], "a change past the ceiling is stored as the ceiling")
        let other = try value { s.administration.updateQuota(callerId: "g1", tenant: "globex", rate: 1000, burst: nil, completion: $0) }
        try expectEqual(other?.rate, 1000, "another tenant is not bound")
        try expectEqual(try s.registration.setCeiling(TenantCeiling(maxBurst: 80), tenant: "acme"), 0)
        let freed = try value { s.administration.updateQuota(callerId: "a1", tenant: "acme", rate: 1000, burst: nil, completion: $0) }
        try expectEqual(freed?.rate, 1000, "the rate ceiling was removed")
        _ = try s.registration.setCeiling(TenantCeiling(), tenant: "acme")
        try expectEqual(try s.administration.ceiling(tenant: "acme"), TenantCeiling())
    },
    contractCase(.administration, "a penalty reset answers false for another tenant's caller") { s in
        try s.caller("a1", tenant: "acme")
        try expectEqual(try value { s.administration.resetPenalty(callerId: "a1", tenant: "globex", at: 5, completion: $0) }, false)
        try expectEqual(try value { s.administration.resetPenalty(callerId: "nobody", tenant: "acme", at: 5, completion: $0) }, false)
        try expectEqual(try value { s.administration.resetPenalty(callerId: "a1", tenant: "acme", at: 5, completion: $0) }, true)
    },
    contractCase(.administration, "keys are listed and revoked within the tenant only") { s in
        try s.caller("a1", tenant: "acme", now: 1)
        try s.caller("a2", tenant: "acme", now: 1)
        let keyId = try s.registration.keys(callerId: "a1")[0].keyId
        try expectEqual(try s.administration.keys(callerId: "a1", tenant: "acme")?.map(\.keyId), [keyId])
        try expectEqual(try s.administration.keys(callerId: "a1", tenant: "globex"), nil, "another tenant's caller")
        try expectEqual(try s.administration.keys(callerId: "nobody", tenant: "acme"), nil)
        func revoke(_ caller: String, _ key: String, _ tenant: String, at time: Milliseconds) throws -> StoredKey? {
            try value { s.administration.revokeKey(callerId: caller, keyId: key, tenant: tenant, at: time, completion: $0) }
        }
        try expectEqual(try revoke("a1", keyId, "globex", at: 5), nil, "another tenant's caller")
        try expectEqual(try revoke("a2", keyId, "acme", at: 5), nil, "another caller's key")
        try expectEqual(try revoke("a1", "0000000000000000", "acme", at: 5), nil, "no such key")
        try expectEqual(try s.registration.keys(callerId: "a1")[0].revokedAt, nil, "the refusals changed nothing")
        try expectEqual(try revoke("a1", keyId, "acme", at: 7)?.revokedAt, 7)
        try expectEqual(try revoke("a1", keyId, "acme", at: 9)?.revokedAt, 7, "revoked once, at its first time")
        try expectEqual(try s.credentials.credential(keyId: keyId)?.key.revokedAt, 7, "authentication sees it")
    }
]

let authorizationCases: [ContractCase] = [
    contractCase(.authorization, "a repeated denial keeps its cooldown and renews the choice") { s in
        let person = subject([[1]])
        try expectEqual(try s.authorizations.record(for: person), nil)
        let first = try s.authorize(.denied, person, now: 1_000, cooldown: 500)
        try expectEqual(first, AuthorizationRecord(request: .denied, requestedAt: 1_000, effectiveAt: 1_500, renewedAt: 1_000))
        try expectEqual(first.status(at: 1_499), .denialPending)
        let again = try s.authorize(.denied, person, now: 2_000, cooldown: 500)
        try expectEqual(again, AuthorizationRecord(request: .denied, requestedAt: 1_000, effectiveAt: 1_500, renewedAt: 2_000))
        try expectEqual(try s.authorizations.record(for: person), again)
        let earlier = try s.authorize(.denied, person, now: 1_200, cooldown: 500)
        try expectEqual(earlier.renewedAt, 2_000, "renewedAt never moves back")
    },
    contractCase(.authorization, "an authorization replaces a denial at once") { s in
        let person = subject([[1]])
        _ = try s.authorize(.denied, person, now: 1_000)
        let authorized = try s.authorize(.authorized, person, now: 1_100)
        try expectEqual(authorized, AuthorizationRecord(request: .authorized, requestedAt: 1_100, effectiveAt: 1_100))
        try expectEqual(try s.authorizations.record(for: person), authorized)
        try expectEqual(try s.authorizations.denials(), [])
        let denied = try s.authorize(.denied, person, now: 3_000, cooldown: 500)
        try expectEqual(denied.effectiveAt, 3_500, "a new denial starts a new cooldown")
    },
    contractCase(.authorization, "the choices renewed since a time, denied or authorized, for another instance's index") { s in
        _ = try s.authorize(.denied, subject([[1]]), now: 1_000, cooldown: 500)
        _ = try s.authorize(.denied, subject([[2]]), now: 2_000, cooldown: 500)
        _ = try s.authorize(.authorized, subject([[3]]), now: 2_500)
        _ = try s.authorize(.authorized, subject([[1]]), now: 3_000)
        let changes = try s.authorizations.authorizations(renewedSince: 2_000).sorted { $0.hash.lexicographicallyPrecedes($1.hash) }
        try expectEqual(
            changes,
            [
                StoredAuthorization(
                    tenant: "default", environment: .production, kind: .account, hash: [1], request: .authorized,
                    effectiveAt: 3_000, renewedAt: 3_000),
                StoredAuthorization(
                    tenant: "default", environment: .production, kind: .account, hash: [2], request: .denied,
                    effectiveAt: 2_500, renewedAt: 2_000),
                StoredAuthorization(
                    tenant: "default", environment: .production, kind: .account, hash: [3], request: .authorized,
                    effectiveAt: 2_500, renewedAt: 2_500)
            ])
        try expectEqual(try s.authorizations.authorizations(renewedSince: 3_001), [])
        // Applied to an index that held the first denial, they leave the one denial in force.
        let index = DenialIndex()
        index.load([
            StoredDenial(
                tenant: "default", environment: .production, kind: .account, hash: [1], effectiveAt: 1_500,
                renewedAt: 1_000)
        ])
        index.apply(changes)
        try expectEqual(index.isDenied("default", .production, .account, hashes: [[1]], now: 5_000), false)
        try expectEqual(index.isDenied("default", .production, .account, hashes: [[2]], now: 5_000), true)
    },
    contractCase(.authorization, "a choice is found under any key of the keyring and kept under the active one") { s in
        _ = try s.authorize(.denied, subject([[1]], key: "k1"), now: 1_000, cooldown: 500)
        let rotated = subject([[2], [1]], key: "k2")
        try expectEqual(try s.authorizations.record(for: rotated)?.effectiveAt, 1_500, "found by the older key's hash")
        let renewed = try s.authorize(.denied, rotated, now: 2_000, cooldown: 500)
        try expectEqual(renewed.effectiveAt, 1_500)
        try expectEqual(
            try s.authorizations.denials(),
            [
                StoredDenial(
                    tenant: "default", environment: .production, kind: .account, hash: [2],
                    effectiveAt: 1_500, renewedAt: 2_000)
            ], "folded under the active hash")
        try expectEqual(try s.authorizations.record(for: subject([[1]]))?.request, nil, "the old hash holds nothing")
        // An authorization under one hash and a denial under another: the denial wins.
        _ = try s.authorize(.authorized, subject([[3]]), now: 1_000)
        _ = try s.authorize(.denied, subject([[4]]), now: 1_000)
        try expectEqual(try s.authorizations.record(for: subject([[3], [4]]))?.request, .denied)
        try expectEqual(try s.authorizations.record(for: subject([[4], [3]]))?.request, .denied)
    },
    contractCase(.authorization, "choices are scoped by tenant, environment and kind") { s in
        _ = try s.authorize(.denied, subject([[1]], tenant: "acme"), now: 1_000, cooldown: 500)
        _ = try s.authorize(.denied, subject([[2]], environment: .sandbox, kind: .device), now: 1_100, cooldown: 500)
        try expectEqual(try s.authorizations.record(for: subject([[1]], tenant: "globex")), nil, "another tenant")
        try expectEqual(try s.authorizations.record(for: subject([[1]], tenant: "acme", environment: .sandbox)), nil)
        try expectEqual(try s.authorizations.record(for: subject([[1]], tenant: "acme", kind: .device)), nil)
        try expectEqual(try s.authorizations.record(for: subject([[1]], tenant: "acme"))?.request, .denied)
        _ = try s.authorize(.authorized, subject([[3]]), now: 1_000)
        let denials = try s.authorizations.denials().sorted { $0.hash.lexicographicallyPrecedes($1.hash) }
        try expectEqual(
            denials,
            [
                StoredDenial(tenant: "acme", environment: .production, kind: .account, hash: [1], effectiveAt: 1_500, renewedAt: 1_000),
                StoredDenial(tenant: "default", environment: .sandbox, kind: .device, hash: [2], effectiveAt: 1_600, renewedAt: 1_100)
            ], "denials only, for the index")
    }
]

let reportingCases: [ContractCase] = [
    contractCase(.reporting, "each caller's window counts from its penalty reset") { s in
        for id in ["c1", "c2", "c3"] { try s.caller(id) }
        // The window starts at 10,000; now is 20,000.
        try s.record("old", caller: "c1", created: 5_000, due: 6_000)  // before the window
        try s.record("on-time", caller: "c1", created: 10_000, due: 15_000)  // at its start: counted
        _ = try s.report("on-time", caller: "c1", at: 15_000)
        try s.record("late", caller: "c1", created: 12_000, due: 13_000)
        _ = try s.report("late", caller: "c1", at: 16_000)
        try s.record("overdue", caller: "c1", created: 12_500, due: 19_999)
        try s.record("pending", caller: "c1", created: 13_000, due: 20_000)
        try s.record("forgiven", caller: "c2", created: 11_000, due: 11_500)
        try s.record("after-reset", caller: "c2", created: 12_000, due: 30_000)
        try expect(try value { s.administration.resetPenalty(callerId: "c2", tenant: "default", at: 12_000, completion: $0) })
        try expectEqual(
            try s.reporting.reportingStats(since: 10_000, now: 20_000),
            [
                "c1": ReportingStats(evaluations: 4, onTime: 1, late: 1, overdue: 1, pending: 1),
                "c2": ReportingStats(evaluations: 1, onTime: 0, late: 0, overdue: 0, pending: 1)
            ], "c3 made no evaluation: no entry")
    }
]

let velocityCases: [ContractCase] = [
    contractCase(.velocity, "history since a time, oldest first, one millisecond in the order stored") { s in
        let plan: [(id: String, caller: String, at: Milliseconds, account: UInt8)] = [
            ("e1", "zeta", 1_000, 1), ("e2", "alpha", 2_000, 2), ("e4", "zeta", 3_000, 3),
            ("e3", "mid", 3_000, 4), ("e5", "alpha", 4_000, 5), ("e6", "mid", 5_000, 6)
        ]
        for e in plan { try s.record(e.id, caller: e.caller, created: e.at, account: [e.account]) }
        try expectEqual(try s.velocity.velocityEvents(since: 2_000).map { $0.account?.first }, [2, 3, 4, 5, 6])
        try expectEqual(try s.velocity.velocityEvents(since: 0).count, 6)
        try expectEqual(try s.velocity.velocityEvents(since: 5_001), [])
    },
    contractCase(.velocity, "batches are bounded and continue where the last ended, ties included") { s in
        // 300 evaluations over 30 milliseconds of 10 each, by three callers, stored out of time order.
        for i in 0..<300 {
            try s.record(
                "e\(i)", caller: "c\(i % 3)", created: 1_000 + Milliseconds((i * 7) % 30),
                account: [UInt8(i % 256), UInt8(i / 256)])
        }
        let end = try s.velocity.velocityHistoryEnd()
        var cursor: VelocityHistoryCursor? = .from(1_005)
        var read: [VelocityEvent] = [], batches = 0
        while let position = cursor {
            let batch = try s.velocity.velocityEvents(after: position, through: end, limit: 16)
            try expect(batch.events.count <= 16, "a batch holds at most the limit: \(batch.events.count)")
            read += batch.events
            cursor = batch.next
            batches += 1
            try expect(batches < 1_000, "the batches come to an end")
        }
        try expectEqual(read.count, 250, "each evaluation from 1005 on, once")
        try expectEqual(Set(read.map(\.account!)).count, 250)
        try expect(zip(read, read.dropFirst()).allSatisfy { $0.time <= $1.time }, "oldest first")
        try expectEqual(read, try s.velocity.velocityEvents(since: 1_005, batch: 1_000), "the same in one batch")
    },
    contractCase(.velocity, "a replay reads what was stored when it began, not what came after") { s in
        try s.record("before", created: 5_000, account: [1])
        let end = try s.velocity.velocityHistoryEnd()
        // Stored after the replay began, one of them with an earlier clock time: the tracker
        // gets these live, so the replay must not.
        try s.record("after", created: 6_000, account: [2])
        try s.record("after-early", created: 4_000, account: [3])
        let batch = try s.velocity.velocityEvents(after: .from(0), through: end, limit: 100)
        try expectEqual(batch.events.map(\.account), [[1]])
        try expectEqual(batch.next, nil)
    },
    contractCase(.velocity, "an event carries what the tracker counts") { s in
        try s.record(
            "e1", environment: .sandbox, created: 7_000, account: nil, category: .account, tracked: .medium,
            raisedByVelocity: true)
        try s.record("e2", created: 8_000, account: [5], category: .payment, tracked: nil)
        try expectEqual(
            try s.velocity.velocityEvents(since: 0),
            [
                VelocityEvent(
                    environment: .sandbox, time: 7_000, account: nil, device: [9], counterparty: [4], isPayment: false,
                    value: .medium, raisedByVelocity: true),
                VelocityEvent(
                    environment: .production, time: 8_000, account: [5], device: [9], counterparty: [4], isPayment: true,
                    value: nil, raisedByVelocity: false)
            ])
    }
]

let retentionCases: [ContractCase] = [
    contractCase(.retention, "evaluations created before the cutoff go, with their reports") { s in
        try s.record("old1", caller: "zeta", insights: ["o1"], created: 1_000)
        try s.record("old2", caller: "alpha", insights: ["o2"], created: 2_999)
        try s.record("new", caller: "alpha", insights: ["n"], created: 3_000)
        _ = try s.report("old1", caller: "zeta")
        _ = try s.report("new", caller: "alpha")
        try expectEqual(try s.purgeAll(olderThan: 3_000), RetentionReport(evaluations: 2))
        try expectEqual(try s.purgeAll(olderThan: 3_000), RetentionReport(), "nothing left to purge")
        try expectEqual(try s.velocity.velocityEvents(since: 0).map(\.time), [3_000])
        try expectEqual(try s.report("old1", caller: "zeta"), .evaluationNotFound)
        try expectEqual(try s.report("new", caller: "alpha"), .alreadyRecorded, "the kept one keeps its report")
        try s.caller("ops", roles: [.labels])
        try expectEqual(
            try s.label([fraud("o2"), fraud("n")]), .processed([.unknownInsight, .accepted], replayed: false),
            "a purged evaluation's insights are gone")
    },
    contractCase(.retention, "labels and submissions go by receipt, even when their evaluation stays") { s in
        try s.caller("ops", roles: [.labels])
        try s.record("e1", insights: ["a", "b"], created: 10_000)
        _ = try s.label([fraud("a")], key: "old", at: 1_000)
        _ = try s.label([fraud("b")], key: "new", at: 5_000)
        try expectEqual(try s.purgeAll(olderThan: 3_000), RetentionReport(labels: 1, labelSubmissions: 1))
        try expectEqual(
            try s.label([fraud("a", .confirmedLegitimate)], key: "old", body: "other", at: 6_000),
            .processed([.accepted], replayed: false), "the label and the key are free")
        try expectEqual(
            try s.label([fraud("b", .confirmedLegitimate)], key: "new", body: "other", at: 6_000),
            .idempotencyKeyReused, "the newer submission is kept")
    },
    contractCase(.retention, "authorizations go when not renewed since the cutoff") { s in
        _ = try s.authorize(.denied, subject([[1]]), now: 100)
        _ = try s.authorize(.denied, subject([[1]]), now: 5_000)  // renewed: kept
        _ = try s.authorize(.denied, subject([[2]]), now: 1_000)
        _ = try s.authorize(.authorized, subject([[3]]), now: 1_000)
        _ = try s.authorize(.authorized, subject([[4]]), now: 3_000)
        try expectEqual(try s.purgeAll(olderThan: 3_000), RetentionReport(authorizations: 2))
        try expectEqual(try s.authorizations.denials().map(\.hash), [[1]])
        try expectEqual(try s.authorizations.record(for: subject([[1]]))?.requestedAt, 100)
        try expectEqual(try s.authorizations.record(for: subject([[2]])), nil)
        try expectEqual(try s.authorizations.record(for: subject([[3]])), nil)
        try expectEqual(try s.authorizations.record(for: subject([[4]]))?.request, .authorized)
    },
    contractCase(.retention, "a batch is bounded; repeated batches purge everything old") { s in
        for i in 0..<1_100 { try s.record("e\(i)", caller: "c\(i % 3)", insights: ["i\(i)"], created: Milliseconds(i)) }
        let first = try value { s.retention.purgeBatch(olderThan: 1_050, completion: $0) }
        try expect(first.evaluations > 0 && first.evaluations < 1_050, "one batch is bounded: \(first.evaluations)")
        try expectEqual(first.evaluations + (try s.purgeAll(olderThan: 1_050)).evaluations, 1_050)
        try expectEqual(try s.velocity.velocityEvents(since: 0).count, 50)
    }
]

// Erasure (docs/privacy.md "Erasure"): the same hash bytes stand for the subject in two tenants'
// evaluations here, to show that erasure in one leaves the other's rows alone (real tenants hash
// differently; an opt-out's hash is unique in its environment and kind, so tenant b's has its own).
let erasureCases: [ContractCase] = [
    contractCase(.erasure, "erasure unlinks the tenant's evaluations and opt-outs under every hash, and nothing else") { s in
        let old: [UInt8] = [0xA1, 1], rotated: [UInt8] = [0xA2, 2], other: [UInt8] = [7], tenantB: [UInt8] = [0xB1]
        try s.caller("c1", tenant: "a")
        try s.caller("c2", tenant: "a")
        try s.caller("c3", tenant: "b")
        try s.caller("ops", tenant: "a", roles: [.labels])
        try s.record("e1", caller: "c1", insights: ["i1"], created: 1_000, account: old)
        try s.record("e2", caller: "c2", insights: ["i2"], created: 1_001, account: rotated)
        try s.record("e3", caller: "c3", insights: ["i3"], created: 1_002, account: old)
        try s.record("e4", caller: "c1", insights: ["i4"], created: 1_003, account: other)
        try expectEqual(try s.report("e1", caller: "c1", ids: ["i1"]), .recorded(.onTime))
        try expectEqual(try s.label([fraud("i1")], caller: "ops", tenant: "a"), .processed([.accepted], replayed: false))
        _ = try s.authorize(.denied, subject([old], tenant: "a"), now: 1_000)
        _ = try s.authorize(.denied, subject([rotated], tenant: "a", environment: .sandbox), now: 1_000)
        _ = try s.authorize(.denied, subject([old], tenant: "a", kind: .device), now: 1_000)
        _ = try s.authorize(.denied, subject([tenantB], tenant: "b"), now: 1_000)
        _ = try s.authorize(.denied, subject([other], tenant: "a"), now: 1_000)
        let stats = try s.reporting.reportingStats(since: 0, now: 3_000)

        try expectEqual(
            try s.erase(ErasedSubject(tenant: "a", account: [old, rotated])),
            SubjectErasureReport(evaluations: 2, authorizations: 2))

        let events = try s.velocity.velocityEvents(since: 0)
        try expectEqual(events.map(\.account), [nil, nil, old, other], "the hashes of tenant a's evaluations")
        try expectEqual(events.map(\.device), [[9], [9], [9], [9]], "the kinds not given")
        try expectEqual(try s.authorizations.record(for: subject([old, rotated], tenant: "a")), nil, "tenant a's opt-outs")
        try expectEqual(try s.authorizations.record(for: subject([rotated], tenant: "a", environment: .sandbox)), nil)
        try expect(
            try s.authorizations.record(for: subject([old], tenant: "a", kind: .device)) != nil,
            "a device opt-out under the same bytes stays: no device hash was given")
        try expectEqual(
            try s.erase(ErasedSubject(tenant: "a", account: [tenantB])), SubjectErasureReport(),
            "tenant b's opt-out is not tenant a's to erase")
        try expect(try s.authorizations.record(for: subject([tenantB], tenant: "b")) != nil, "tenant b's opt-out stays")
        try expect(try s.authorizations.record(for: subject([other], tenant: "a")) != nil, "another subject's stays")
        try expectEqual(try s.reporting.reportingStats(since: 0, now: 3_000), stats, "counts do not change")
        try expectEqual(try s.report("e1", caller: "c1", ids: ["i1"]), .alreadyRecorded, "the report stays")
        try expectEqual(
            try s.label([fraud("i1")], caller: "ops", tenant: "a", key: "k2", body: "b2"),
            .processed([.duplicate], replayed: false), "the label stays")

        try expectEqual(
            try s.erase(ErasedSubject(tenant: "a", account: [old, rotated])), SubjectErasureReport(),
            "a second erasure finds nothing")
    },
    contractCase(.erasure, "an erasure naming an environment leaves the other's evaluations and opt-outs") { s in
        // A sandbox admin erases in the sandbox only (issue 45).
        let hash: [UInt8] = [0xE1, 7]
        try s.caller("prod")
        try s.caller("sand", environment: .sandbox)
        try s.record("p1", caller: "prod", created: 1_000, account: hash)
        try s.record("s1", caller: "sand", environment: .sandbox, created: 1_001, account: hash)
        _ = try s.authorize(.denied, subject([hash]), now: 1_000)
        _ = try s.authorize(.denied, subject([hash], environment: .sandbox), now: 1_000)
        try expectEqual(
            try s.erase(ErasedSubject(tenant: Tenant.defaultName, environment: .sandbox, account: [hash])),
            SubjectErasureReport(evaluations: 1, authorizations: 1))
        let events = try s.velocity.velocityEvents(since: 0)
        try expectEqual(events.map(\.account), [hash, nil], "production's evaluation keeps its hash")
        try expect(try s.authorizations.record(for: subject([hash])) != nil, "production's opt-out stays")
        try expectEqual(try s.authorizations.record(for: subject([hash], environment: .sandbox)), nil)
        try expectEqual(
            try s.erase(ErasedSubject(tenant: Tenant.defaultName, account: [hash])),
            SubjectErasureReport(evaluations: 1, authorizations: 1), "without an environment: both")
    },
    contractCase(.erasure, "every kind given is unlinked, an evaluation counted once") { s in
        try s.caller("c1")
        try s.record("e1", created: 1_000, account: [5])
        try s.record("e2", created: 1_001, account: [6])
        _ = try s.authorize(.denied, subject([[9]], kind: .device), now: 1_000)
        try expectEqual(
            try s.erase(
                ErasedSubject(
                    tenant: Tenant.defaultName, account: [[5]], device: [[9]],
                    counterparty: [[4]])),
            SubjectErasureReport(evaluations: 2, authorizations: 1))
        let events = try s.velocity.velocityEvents(since: 0)
        try expectEqual(events.map(\.account), [nil, [6]])
        try expectEqual(events.map(\.device), [nil, nil])
        try expectEqual(events.map(\.counterparty), [nil, nil])
        try expectEqual(
            try s.erase(
                ErasedSubject(
                    tenant: Tenant.defaultName, account: [[5]], device: [[9]],
                    counterparty: [[4]])), SubjectErasureReport())
    }
]
