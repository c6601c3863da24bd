import InsightDomain

// `SubjectHistory` (docs/api.md "The person's view"): the evaluations that carried one subject.

extension StoreSet {
    /// Stores an evaluation carrying the given hashes, with `insights` (type, outcome) in order.
    func carry(
        _ id: String, caller: String = "c1", environment: Environment = .production, created: Milliseconds,
        account: [UInt8]? = nil, device: [UInt8]? = nil, counterparty: [UInt8]? = nil,
        category: OperationCategory = .payment,
        insights: [(type: String, outcome: InsightOutcome)] = [("isLikelyBeingCoached", .value(.high, reasons: []))],
        decision: Decision? = nil, line: UInt = #line
    ) throws {
        let evaluation = EvaluationRecord(
            eventId: id, callerId: caller, environment: environment, category: category, createdAt: created,
            reportConsumptionBy: created + 1_000,
            subject: HashedSubject(account: account, device: device, counterparty: counterparty, keyId: "k1"),
            insights: insights.enumerated().map { position, insight in
                InsightRecord(
                    insightId: "\(id)-i\(position)", type: insight.type, schemaVersion: 1,
                    modelVersion: insight.type == "unknownType" ? nil : "2.0", newestModelVersion: nil,
                    outcome: insight.outcome)
            }, decision: decision)
        try value(line: line) { ledger.record(evaluation, answer: Array(evaluation.eventId.utf8), completion: $0) }
    }

    func page(
        _ kind: IdentifierKind, _ hashes: [[UInt8]], tenant: String = Tenant.defaultName,
        environment: Environment = .production, limit: Int = 50,
        after: SubjectHistoryCursor? = nil
    ) throws -> SubjectHistoryPage {
        try self.history.subjectHistory(
            SubjectHistoryQuery(
                kind: kind, hashes: hashes, tenant: tenant,
                environment: environment, limit: limit, after: after))
    }

    /// A page of the account with `hashes`.
    func page(
        _ hashes: [[UInt8]], tenant: String = Tenant.defaultName, environment: Environment = .production,
        limit: Int = 50
    ) throws -> SubjectHistoryPage {
        try page(.account, hashes, tenant: tenant, environment: environment, limit: limit)
    }

    /// Every page of a subject's history, `limit` at a time (at most 100 pages).
    func allPages(_ kind: IdentifierKind, _ hashes: [[UInt8]], limit: Int) throws -> [SubjectHistoryPage] {
        var pages = [try page(kind, hashes, limit: limit)]
        while let next = pages.last?.next {
            try expect(pages.count < 100, "the pages come to an end")
            pages.append(try page(kind, hashes, limit: limit, after: next))
        }
        return pages
    }
}

let historyCases: [ContractCase] = [
    contractCase(.history, "a subject's evaluations of its tenant and environment, newest first, all they hold") { s in
        try s.caller("c1")
        try s.caller("c2")
        try s.caller("s1", environment: .sandbox)
        try s.caller("a1", tenant: "acme")
        try s.carry("e1", caller: "c1", created: 1_000, account: [7], device: [9], category: .account)
        try s.carry(
            "e2", caller: "c2", created: 2_000, account: [7], counterparty: [4],
            insights: [
                ("isLikelyBeingCoached", .value(.medium, reasons: ["activeCallDuringSession"])),
                ("unknownType", .error(.insightUnavailable, detail: "no such type")),
                ("isLikelyBeingCoached", .value(.unknown, reasons: []))
            ])
        try s.carry("sandbox", caller: "s1", environment: .sandbox, created: 3_000, account: [7])
        try s.carry("acme", caller: "a1", created: 4_000, account: [7])
        try s.carry("other", caller: "c1", created: 5_000, account: [8], device: [9])
        try s.carry("ghost", caller: "gone", created: 500, account: [7])

        let page = try s.page([[7]])
        try expectEqual(page.entries.map(\.eventId), ["e2", "e1", "ghost"], "production, tenant default")
        try expectEqual(page.next, nil)
        try expectEqual(
            page.entries.first,
            SubjectHistoryEntry(
                eventId: "e2", createdAt: 2_000, category: .payment, callerId: "c2", callerName: "caller c2",
                insights: [
                    SubjectHistoryInsight(type: "isLikelyBeingCoached", modelVersion: "2.0", outcome: .value(.medium)),
                    SubjectHistoryInsight(type: "unknownType", modelVersion: nil, outcome: .error(.insightUnavailable)),
                    SubjectHistoryInsight(type: "isLikelyBeingCoached", modelVersion: "2.0", outcome: .value(.unknown))
                ]))
        try expectEqual(page.entries[1].category, .account)
        try expectEqual(page.entries[1].callerName, "caller c1")
        try expectEqual(page.entries[2].callerName, nil, "an unregistered caller's evaluation is tenant default's")
        try expectEqual(try s.page([[7]], environment: .sandbox).entries.map(\.eventId), ["sandbox"])
        try expectEqual(try s.page([[7]], tenant: "acme").entries.map(\.eventId), ["acme"])
        try expectEqual(try s.page([[7]], tenant: "acme", environment: .sandbox).entries, [])
        try expectEqual(try s.page(.device, [[9]]).entries.map(\.eventId), ["other", "e1"], "by device")
        try expectEqual(try s.page(.counterparty, [[4]]).entries.map(\.eventId), ["e2"], "by counterparty")
        try expectEqual(try s.page(.counterparty, [[7]]).entries, [], "an account's hash is not a counterparty's")
    },
    contractCase(.history, "each entry carries the action its decision answered, none before decisions existed") { s in
        try s.caller("c1")
        try s.carry("old", created: 1_000, account: [7])
        try s.carry(
            "blocked", created: 2_000, account: [7],
            decision: Decision(action: .block, reasons: ["agentNotRequested"], policyVersion: "default-1"))
        try s.carry(
            "confirmed", created: 3_000, account: [7],
            decision: Decision(action: .confirmOutOfBand, reasons: ["coachingHigh"], policyVersion: "default-1"))
        try expectEqual(try s.page([[7]]).entries.map(\.decision), [.confirmOutOfBand, .block, nil])
    },
    contractCase(.history, "a rotated key: every hash of the subject finds its rows") { s in
        try s.caller("c1")
        try s.carry("old", created: 1_000, account: [7, 1])
        try s.carry("new", created: 2_000, account: [7, 2])
        try s.carry("newest", created: 3_000, account: [7, 1])
        try expectEqual(try s.page([[7, 1], [7, 2]]).entries.map(\.eventId), ["newest", "new", "old"])
        try expectEqual(try s.page([[7, 2]]).entries.map(\.eventId), ["new"])
        try expectEqual(try s.page([[7, 2], [7, 1], [7, 2]]).entries.count, 3, "a hash given twice")
    },
    contractCase(.history, "pages continue where the last ended, across equal times and hashes") { s in
        for id in ["c1", "c2", "c3"] { try s.caller(id) }
        // 12 evaluations in 3 milliseconds under two hashes, stored out of time order; within a
        // millisecond the last stored comes first.
        var stored: [(id: String, created: Milliseconds)] = []
        for i in 0..<12 {
            let created = 1_000 + Milliseconds((i * 5) % 3)
            try s.carry("e\(i)", caller: "c\(i % 3 + 1)", created: created, account: [7, UInt8(i % 2)])
            stored.append(("e\(i)", created))
        }
        try s.carry("else", created: 1_001, account: [8])
        let expected = stored.enumerated().sorted { ($0.element.created, $0.offset) > ($1.element.created, $1.offset) }
            .map(\.element.id)
        for limit in [1, 5, 6, 12, 13] {
            let pages = try s.allPages(.account, [[7, 0], [7, 1]], limit: limit)
            try expectEqual(pages.flatMap(\.entries).map(\.eventId), expected, "limit \(limit)")
            try expectEqual(pages.count, (12 + limit - 1) / limit, "limit \(limit): no empty page at the end")
            try expect(pages.dropLast().allSatisfy { $0.entries.count == limit }, "limit \(limit): full pages")
        }
    },
    contractCase(.history, "a page holds 1 to 500") { s in
        try s.caller("c1")
        for limit in [0, -1, 501] {
            try expectThrows("limit \(limit)") {
                try SubjectHistoryQuery(kind: .account, hashes: [[7]], tenant: "default", environment: .production, limit: limit)
            }
        }
        for i in 0..<3 { try s.carry("e\(i)", created: 1_000 + Milliseconds(i), account: [7]) }
        let one = try s.page([[7]], limit: 1)
        try expectEqual(one.entries.map(\.eventId), ["e2"])
        try expectEqual(one.next, SubjectHistoryCursor(time: 1_002, sequence: one.next?.sequence ?? -1))
        try expectEqual(try s.page([[7]], limit: 500).entries.count, 3)
    },
    contractCase(.history, "a subject never seen, or no hash at all, has an empty history") { s in
        try s.caller("c1")
        try s.carry("e1", created: 1_000, account: [7], device: [9])
        try expectEqual(try s.page([[6]]), SubjectHistoryPage(entries: [], next: nil))
        try expectEqual(try s.page([]), SubjectHistoryPage(entries: [], next: nil))
        try expectEqual(try s.page(.counterparty, [[9]]), SubjectHistoryPage(entries: [], next: nil))
    }
]
