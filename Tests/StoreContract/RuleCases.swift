import InsightDomain

// A case for each branch of the product rules the domain states as pure functions
// (`AuthorizationRecord.applying` and `.standing`, `Caller.registering`, `Caller.checkQuota`,
// `TenantCeiling.check`): every backend calls them, or writes them in SQL where one round trip
// needs it (PostgreSQL), and these cases hold each backend to them. The rules' timeliness and
// reporting counts (`Timeliness(reportedAt:deadline:)`, `ReportingStats.count`,
// `ConsumptionResult.repeated`) and a replayed label submission (`LabelSubmissionResult.replaying`)
// have their cases in the consumption, reporting and labels areas.

let retryRuleCases: [ContractCase] = [
    contractCase(.retries, "isLive: an entry answers until the millisecond before it expires, and its key is free at it") { s in
        try s.caller("c1")
        let key = [UInt8](repeating: 7, count: 32)
        let first = StoreSet.retried("e1", key: key, expires: 2_000)
        try value { s.ledger.record(first, answer: [1], completion: $0) }
        try expectEqual(try s.ledger.retryEntry(keys: [key], now: 1_999)?.eventId, first.retry?.eventId, "the millisecond before")
        try expect(first.retry?.isLive(at: 1_999) == true && first.retry?.isLive(at: 2_000) == false, "the domain's answers")
        let refused = try wait {
            s.ledger.record(
                StoreSet.retried("e2", key: key, created: 1_999, expires: 3_000), answer: [2],
                completion: $0)
        }
        if case .success = refused { throw ContractFailure(description: "a second evaluation was stored under a live key") }
        try value { s.ledger.record(StoreSet.retried("e3", key: key, created: 2_000, expires: 3_000), answer: [3], completion: $0) }
        try expectEqual(try s.ledger.retryEntry(keys: [key], now: 2_000)?.eventId, "e3", "a new evaluation at its expiry")
    }
]

let labelRuleCases: [ContractCase] = [
    contractCase(.labels, "repeating: a label again is a duplicate only with the same outcome and fraud type") { s in
        try s.caller("ops", roles: [.labels])
        try s.record("e1", insights: ["a", "b"])
        let scam = Label(insightId: "a", outcome: .confirmedFraud, fraudType: .romanceScam, discoveredAt: "2027-01-15")
        let other = Label(insightId: "a", outcome: .confirmedFraud, fraudType: .purchaseScam, discoveredAt: "2027-01-15")
        let legitimate = fraud("b", .confirmedLegitimate)
        try expectEqual(try s.label([scam, legitimate]), .processed([.accepted, .accepted], replayed: false))
        try expectEqual(
            try s.label([scam, other, fraud("b", .confirmedLegitimate), fraud("b")], key: "k2", body: "b2"),
            .processed([.duplicate, .conflict, .duplicate, .conflict], replayed: false))
        try expectEqual(
            [
                LabelResultStatus.repeating(scam, storedOutcome: "confirmedFraud", storedFraudType: "romanceScam"),
                .repeating(other, storedOutcome: "confirmedFraud", storedFraudType: "romanceScam"),
                .repeating(legitimate, storedOutcome: "confirmedLegitimate", storedFraudType: nil),
                .repeating(fraud("b"), storedOutcome: "confirmedLegitimate", storedFraudType: nil)
            ],
            [.duplicate, .conflict, .duplicate, .conflict], "the domain's answers")
    }
]

let authorizationRuleCases: [ContractCase] = [
    contractCase(.authorization, "applying: a first denial is pending until the cooldown ends and in effect at its end") { s in
        let record = try s.authorize(.denied, subject([[1]]), now: 1_000, cooldown: 500)
        try expectEqual(record, AuthorizationRecord.applying(.denied, over: nil, now: 1_000, cooldown: 500))
        try expectEqual(record, AuthorizationRecord(request: .denied, requestedAt: 1_000, effectiveAt: 1_500))
        try expectEqual(record.status(at: 1_499), .denialPending)
        try expectEqual(record.status(at: 1_500), .denied, "exactly at the cooldown's end")
    },
    contractCase(.authorization, "applying: a denial over a denial whose cooldown has ended keeps it and renews it") { s in
        let first = try s.authorize(.denied, subject([[1]]), now: 1_000, cooldown: 500)
        let again = try s.authorize(.denied, subject([[1]]), now: 1_500, cooldown: 9_000)
        try expectEqual(again, AuthorizationRecord.applying(.denied, over: first, now: 1_500, cooldown: 9_000))
        try expectEqual(again, AuthorizationRecord(request: .denied, requestedAt: 1_000, effectiveAt: 1_500, renewedAt: 1_500))
        try expectEqual(try s.authorizations.record(for: subject([[1]])), again)
    },
    contractCase(.authorization, "applying: a denial over an authorization starts a new cooldown") { s in
        let authorized = try s.authorize(.authorized, subject([[1]]), now: 1_000)
        let denied = try s.authorize(.denied, subject([[1]]), now: 2_000, cooldown: 700)
        try expectEqual(denied, AuthorizationRecord.applying(.denied, over: authorized, now: 2_000, cooldown: 700))
        try expectEqual(denied, AuthorizationRecord(request: .denied, requestedAt: 2_000, effectiveAt: 2_700))
    },
    contractCase(.authorization, "applying: an authorization takes effect at once, over nothing or over a pending denial") { s in
        let fresh = try s.authorize(.authorized, subject([[1]]), now: 1_000)
        try expectEqual(fresh, AuthorizationRecord.applying(.authorized, over: nil, now: 1_000, cooldown: 500))
        try expectEqual(fresh, AuthorizationRecord(request: .authorized, requestedAt: 1_000, effectiveAt: 1_000))
        let pending = try s.authorize(.denied, subject([[2]]), now: 1_000, cooldown: 500)
        let lifted = try s.authorize(.authorized, subject([[2]]), now: 1_200)
        try expectEqual(lifted, AuthorizationRecord.applying(.authorized, over: pending, now: 1_200, cooldown: 500))
        try expectEqual(lifted.status(at: 1_500), .authorized, "the cooldown's end changes nothing")
    },
    contractCase(.authorization, "standing: of two denials the last in the keyring's order, of two authorizations the first") { s in
        let early = try s.authorize(.denied, subject([[1]]), now: 1_000)
        let late = try s.authorize(.denied, subject([[2]]), now: 2_000)
        try expectEqual(try s.authorizations.record(for: subject([[1], [2]])), late)
        try expectEqual(try s.authorizations.record(for: subject([[2], [1]])), early)
        try expectEqual(late, AuthorizationRecord.standing(among: [early, late]))
        let first = try s.authorize(.authorized, subject([[3]]), now: 3_000)
        let second = try s.authorize(.authorized, subject([[4]]), now: 4_000)
        try expectEqual(try s.authorizations.record(for: subject([[3], [4]])), first)
        try expectEqual(try s.authorizations.record(for: subject([[4], [3]])), second)
        try expectEqual(first, AuthorizationRecord.standing(among: [first, second]))
    }
]

let registrationRuleCases: [ContractCase] = [
    contractCase(.registration, "registering: each refusal is the CallerRegistrationError that names it") { s in
        try expectError(.invalidTenant("Acme Corp")) { try s.register(tenant: "Acme Corp") }
        try expectError(.invalidTenant("Acme Corp"), "the tenant before the roles") { try s.register(tenant: "Acme Corp", roles: []) }
        try expectError(.noRoles) { try s.register(roles: []) }
        try expectError(.noRoles, "the roles before the rate") { try s.register(roles: [], rate: 0) }
        try expectError(.invalidRate) { try s.register(rate: 0) }
        try expectError(.invalidRate) { try s.register(rate: -.infinity) }
        try expectError(.invalidRate) { try s.register(rate: .nan) }
        try expectError(.invalidBurst) { try s.register(burst: 0) }
        try expectError(.invalidName) { try s.register(name: "pay\u{202E}stneme") }
        try expectEqual(try s.registration.list(tenant: nil), [], "nothing was stored")
        _ = try s.register()
        try expectError(.callerExists("c1")) { try s.register(name: "other") }
        try expectEqual(try s.registration.list(tenant: nil).map(\.name), ["x"], "the first caller is left as it was")
    },
    contractCase(.registration, "keys: an unknown caller or key, and a second revocation, are CallerRegistrationErrors") { s in
        let (_, key) = try s.caller("c1")
        try expectError(.noCaller("nobody")) { try s.registration.issueKey(callerId: "nobody", now: 2) }
        try expectError(.noKey("0000000000000000")) { try s.registration.revokeKey(keyId: "0000000000000000", now: 2) }
        try s.registration.revokeKey(keyId: key.keyId, now: 3)
        try expectError(.keyAlreadyRevoked(key.keyId)) { try s.registration.revokeKey(keyId: key.keyId, now: 4) }
        try expectEqual(try s.registration.keys(callerId: "c1").map(\.revokedAt), [3], "revoked once")
    },
    contractCase(.registration, "checkQuota: an invalid rate or burst, or an unknown caller, leaves the quota as it was") { s in
        try s.caller("c1")
        try expectError(.invalidRate) { try s.registration.setQuota(callerId: "c1", rate: 0, burst: nil) }
        try expectError(.invalidRate) { try s.registration.setQuota(callerId: "c1", rate: .infinity, burst: 5) }
        try expectError(.invalidBurst) { try s.registration.setQuota(callerId: "c1", rate: 5, burst: 0) }
        try expectError(.noCaller("nobody")) { try s.registration.setQuota(callerId: "nobody", rate: 5, burst: nil) }
        try expectError(.noCaller("nobody")) { try s.registration.setTrainingCapture(callerId: "nobody", true) }
        try expectEqual(try s.registration.caller("c1", tenant: nil).map { [$0.rate, Double($0.burst)] }, [10, 20])
        let changed = try s.registration.setQuota(callerId: "c1", rate: 0.5, burst: 1)
        try expectEqual([changed.rate, Double(changed.burst)], [0.5, 1], "the smallest quota allowed")
    },
    contractCase(.registration, "TenantCeiling.check: an invalid tenant or ceiling is refused and sets nothing") { s in
        try s.caller("a1", tenant: "acme")
        try expectError(.invalidTenant("")) { try s.registration.setCeiling(TenantCeiling(maxRate: 1), tenant: "") }
        try expectError(.invalidRateCeiling) { try s.registration.setCeiling(TenantCeiling(maxRate: 0), tenant: "acme") }
        try expectError(.invalidRateCeiling) { try s.registration.setCeiling(TenantCeiling(maxRate: .nan), tenant: "acme") }
        try expectError(.invalidBurstCeiling) { try s.registration.setCeiling(TenantCeiling(maxBurst: 0), tenant: "acme") }
        try expectEqual(try s.registration.ceiling(tenant: "acme"), TenantCeiling(), "no ceiling was set")
        try expectEqual(try s.registration.caller("a1", tenant: nil)?.rate, 10, "no caller was lowered")
        try expectEqual(
            try s.registration.setCeiling(TenantCeiling(maxRate: 10, maxBurst: 1), tenant: "acme"), 1,
            "a ceiling at the caller's rate lowers only its burst")
        try expectEqual(try s.registration.caller("a1", tenant: nil).map { [$0.rate, Double($0.burst)] }, [10, 1])
    }
]

/// Expects `body` to throw exactly `expected`.
func expectError<T>(
    _ expected: CallerRegistrationError, _ what: String = "", line: UInt = #line,
    _ body: () throws -> T
) throws {
    do {
        _ = try body()
    } catch let error as CallerRegistrationError {
        try expectEqual(error, expected, what, line: line)
        return
    } catch {
        throw ContractFailure(description: "StoreContract line \(line): \(what) threw \(error), expected \(expected)")
    }
    throw ContractFailure(description: "StoreContract line \(line): \(what) did not throw, expected \(expected)")
}
