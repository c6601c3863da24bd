import Dispatch
import InsightDomain
import InsightServices
import XCTest

/// The person's view (docs/api.md "The person's view"): transparency and erasure as use cases, over
/// the in-memory store, the real denial index, velocity tracker and hash keys.
final class SubjectServiceTests: XCTestCase {
    func transparency(
        _ f: Fixture, _ kind: IdentifierKind = .account, _ identifier: String, limit: Int = 50,
        after: SubjectHistoryCursor? = nil, by caller: Caller
    ) throws(Rejection) -> SubjectService.Transparency {
        try f.useCases.subjects.transparency(kind: kind, identifier: identifier, limit: limit, after: after, by: caller)
    }

    func erase(_ f: Fixture, _ identifiers: [IdentifierKind: String], by admin: Caller) throws(Rejection) -> SubjectService.Erasure {
        try f.completed { done in f.useCases.subjects.erase(identifiers, by: admin, resume: { $0() }, completion: done) }
    }

    func accountEvaluations(_ f: Fixture, _ account: String) -> VelocityCounts {
        f.velocity.signals(
            for: VelocityQuery(
                environment: .production,
                accounts: f.hashKeys.current(tenant: Tenant.defaultName).lookupHashes(account, kind: .account),
                devices: [], counterparties: [], isPayment: false)
        ).accountEvaluations
    }

    func testTransparencyFindsTheTenantsEvaluationsNewestFirstWithTheAuthorization() throws {
        let f = Fixture()
        let (bank, app) = (f.caller(), f.caller())
        let other = f.caller(tenant: "other")
        let first = try f.evaluate(Fixture.request(account: "acct-1", counterparty: "payee-9"), by: bank)
        f.clock.advance(seconds: 1)
        let second = try f.evaluate(Fixture.request(account: "acct-1", category: .account), by: app)
        _ = try f.evaluate(Fixture.request(account: "acct-2"), by: bank)
        _ = try f.evaluate(Fixture.request(account: "acct-1"), by: other)
        try f.choose(.denied, "acct-1", by: app)

        let seen = try transparency(f, .account, "acct-1", by: bank)
        XCTAssertEqual(seen.page.entries.map(\.eventId), [second.eventId, first.eventId], "both callers of the tenant, newest first")
        XCTAssertEqual(seen.page.entries.map(\.callerName), ["caller 2", "caller 1"])
        XCTAssertEqual(seen.page.entries.map(\.category), [.account, .payment])
        XCTAssertNil(seen.page.next)
        XCTAssertEqual(seen.authorization?.record?.request, .denied)
        XCTAssertEqual(try transparency(f, .account, "acct-1", by: other).page.entries.count, 1, "another tenant sees only its own")

        let payee = try transparency(f, .counterparty, "payee-9", by: app)
        XCTAssertEqual(payee.page.entries.map(\.eventId), [first.eventId])
        XCTAssertNil(payee.authorization, "a counterparty has no choice to show")
        XCTAssertEqual(try transparency(f, .account, "nobody", by: bank).page.entries, [])
    }

    func testTransparencyPagesAndRefusesALimitOutOfRange() throws {
        let f = Fixture()
        let bank = f.caller()
        var ids: [String] = []
        for _ in 0..<5 {
            ids.append(try f.evaluate(Fixture.request(account: "acct-1"), by: bank).eventId)
            f.clock.advance(seconds: 1)
        }
        var pages: [[String]] = []
        var cursor: SubjectHistoryCursor?
        repeat {
            let page = try transparency(f, .account, "acct-1", limit: 2, after: cursor, by: bank).page
            pages.append(page.entries.map(\.eventId))
            cursor = page.next
        } while cursor != nil
        XCTAssertEqual(pages.flatMap { $0 }, ids.reversed())
        XCTAssertEqual(pages.map(\.count), [2, 2, 1])
        for limit in [0, 501] {
            XCTAssertRejects(.invalid(field: "limit", detail: "must be from 1 to 500")) { () throws(Rejection) in
                try transparency(f, .account, "acct-1", limit: limit, by: bank)
            }
        }
    }

    func testTransparencyFindsRowsHashedUnderARotatedKey() throws {
        let f = Fixture()
        let bank = f.caller()
        let before = try f.evaluate(Fixture.request(account: "acct-1"), by: bank)
        f.hashKeys.replace(try HashKeyring(keys: [Fixture.hashKey, [UInt8](repeating: 0x11, count: 32)]))
        let after = try f.evaluate(Fixture.request(account: "acct-1"), by: bank)
        XCTAssertEqual(Set(try transparency(f, .account, "acct-1", by: bank).page.entries.map(\.eventId)), [before.eventId, after.eventId])
    }

    func testErasureUnlinksEverywhereIsIdempotentAndAuditedWithoutTheIdentifier() throws {
        let f = Fixture()
        let (bank, app) = (f.caller(), f.caller())
        let admin = f.caller([.admin])
        _ = try f.evaluate(Fixture.request(account: "acct-1", device: "dev-1"), by: bank)
        _ = try f.evaluate(Fixture.request(account: "acct-1", counterparty: "payee-9"), by: app)
        let kept = try f.evaluate(Fixture.request(account: "acct-2", device: "dev-1"), by: app)
        try f.choose(.denied, "acct-1", by: bank)
        f.clock.advance(seconds: 73 * 3600)
        XCTAssertRejects(.optedOut) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "acct-1"), by: bank) }
        XCTAssertEqual(accountEvaluations(f, "acct-1").week, 3, "two evaluations and the query")

        let erased = try erase(f, [.account: "acct-1"], by: admin)
        XCTAssertEqual(erased.report, SubjectErasureReport(evaluations: 2, authorizations: 1))
        XCTAssertEqual(erased.hashKeys, 1)
        XCTAssertEqual(try transparency(f, .account, "acct-1", by: bank).page.entries, [])
        XCTAssertNil(try transparency(f, .account, "acct-1", by: bank).authorization?.record, "the opt-out is gone with the hashes")
        XCTAssertEqual(accountEvaluations(f, "acct-1").week, 1, "velocity no longer counts the erased evaluations")
        XCTAssertEqual(try transparency(f, .device, "dev-1", by: bank).page.entries.count, 2, "the device was not named")
        XCTAssertEqual(try transparency(f, .account, "acct-2", by: bank).page.entries.map(\.eventId), [kept.eventId])
        XCTAssertNoThrow(try f.evaluate(Fixture.request(account: "acct-1"), by: bank), "the in-memory opt-out is gone too")

        XCTAssertEqual(
            try erase(f, [.account: "acct-1", .device: "dev-1"], by: admin).report,
            SubjectErasureReport(evaluations: 3, authorizations: 0), "the new evaluation and the device's rows")
        XCTAssertEqual(
            try erase(f, [.account: "acct-1", .device: "dev-1"], by: admin).report, SubjectErasureReport(),
            "idempotent")
        XCTAssertEqual(f.audits.all.map(\.kinds), [[.account], [.account, .device], [.account, .device]])
        XCTAssertEqual(
            f.audits.all.first,
            ErasureAudit(
                tenant: Tenant.defaultName, environment: admin.environment, adminCallerId: admin.callerId, kinds: [.account],
                report: SubjectErasureReport(evaluations: 2, authorizations: 1), hashKeys: 1))
        XCTAssertEqual(f.counter("insightd_subject_erasures_total", ["tenant": "default"]), 3)
        XCTAssertEqual(f.counter("insightd_subject_erased_rows_total", ["table": "evaluations"]), 5)
        XCTAssertEqual(f.counter("insightd_subject_erased_rows_total", ["table": "authorizations"]), 1)
    }

    func testErasureStaysInTheAdminsTenant() throws {
        let f = Fixture()
        let bank = f.caller(), other = f.caller(tenant: "other")
        _ = try f.evaluate(Fixture.request(account: "acct-1"), by: bank)
        _ = try f.evaluate(Fixture.request(account: "acct-1"), by: other)
        XCTAssertEqual(try erase(f, [.account: "acct-1"], by: f.caller([.admin], tenant: "other")).report.evaluations, 1)
        XCTAssertEqual(try transparency(f, .account, "acct-1", by: bank).page.entries.count, 1, "tenant default keeps its row")
        XCTAssertEqual(try transparency(f, .account, "acct-1", by: other).page.entries.count, 0)
    }

    /// An evaluation committed before the erasure may record into velocity after it (on its own
    /// event loop); the second pass a moment later forgets that too.
    func testVelocityRecordedJustAfterTheErasureIsForgottenBySecondPass() throws {
        let f = Fixture()
        let admin = f.caller([.admin])
        let late = try f.evaluate(Fixture.request(account: "acct-1"), by: f.caller())
        _ = try erase(f, [.account: "acct-1"], by: admin)
        // What the evaluation's continuation records, arriving after the erasure's first pass.
        f.velocity.record(
            VelocityEvent(
                environment: .production, time: late.createdAt, account: late.subject.account, device: nil,
                counterparty: nil, isPayment: true, value: late.trackedValue, raisedByVelocity: false))
        XCTAssertEqual(accountEvaluations(f, "acct-1").week, 2)
        let deadline = DispatchTime.now() + .seconds(10)
        while accountEvaluations(f, "acct-1").week != 1, DispatchTime.now() < deadline { usleep(5_000) }
        XCTAssertEqual(accountEvaluations(f, "acct-1").week, 1)
    }

    func testANamedTenantMustBeTheKeysOwn() throws {
        let f = Fixture()
        let bank = f.caller(tenant: "bank-a")
        XCTAssertNoThrow(try f.useCases.subjects.confirmTenant(nil, of: bank))
        XCTAssertNoThrow(try f.useCases.subjects.confirmTenant("bank-a", of: bank))
        XCTAssertRejects(.invalid(field: "tenant", detail: "is not the tenant of this credential, which acts only in its own tenant")) {
            () throws(Rejection) in try f.useCases.subjects.confirmTenant("bank-b", of: bank)
        }
    }

    func testAnUnreadableHistoryIsARejection() {
        let f = Fixture()
        let bank = f.caller()
        f.store.failReads(true)
        XCTAssertRejects(.unreadable(.evaluations)) { () throws(Rejection) in try transparency(f, .account, "acct-1", by: bank) }
    }

    func testAStoreFailureIsARejectionAndNothingIsAudited() throws {
        let f = Fixture()
        let admin = f.caller([.admin])
        f.store.failWrites(.unavailable("test"))
        XCTAssertRejects(.store(.unavailable("test"))) { () throws(Rejection) in try erase(f, [.account: "acct-1"], by: admin) }
        XCTAssertEqual(f.audits.all, [])
        XCTAssertEqual(f.counter("insightd_subject_erasures_total"), 0)
    }
}
