import InsightDomain
import InsightServices
import XCTest

/// docs/api.md "Subject authorization" and "Tenants": a person's choice, its cooldown, and its
/// tenant.
final class AuthorizationServiceTests: XCTestCase {
    func status(_ f: Fixture, _ identifier: String, kind: AuthorizableKind = .account, by caller: Caller) throws -> AuthorizationStatus {
        let state = try f.useCases.authorization.query(kind: kind, identifier: identifier, by: caller)
        return state.record?.status(at: state.now) ?? .authorized
    }

    func testWithoutAChoiceInsightsAreOn() throws {
        let f = Fixture()
        let state = try f.useCases.authorization.query(kind: .account, identifier: "acct-77", by: f.caller())
        XCTAssertNil(state.record)
        XCTAssertEqual(state.now, f.clock.now())
    }

    func testADenialIsPendingThroughTheCooldownThenInEffect() throws {
        let f = Fixture()
        let caller = f.caller()
        let start = f.clock.now()
        let state = try f.choose(.denied, "acct-77", by: caller)
        XCTAssertEqual(state.record?.status(at: state.now), .denialPending)
        XCTAssertEqual(state.record?.requestedAt, start)
        XCTAssertEqual(state.record?.effectiveAt, start + 72 * 3_600_000)
        f.clock.advance(ms: 72 * 3_600_000 - 1)
        XCTAssertEqual(try status(f, "acct-77", by: caller), .denialPending)
        f.clock.advance(ms: 1)
        XCTAssertEqual(try status(f, "acct-77", by: caller), .denied)
    }

    func testAskingAgainDoesNotRestartTheCooldown() throws {
        let f = Fixture()
        let caller = f.caller()
        let first = try f.choose(.denied, "acct-77", by: caller)
        f.clock.advance(seconds: 3600)
        let again = try f.choose(.denied, "acct-77", by: caller)
        XCTAssertEqual(again.record?.effectiveAt, first.record?.effectiveAt)
        XCTAssertEqual(again.record?.requestedAt, first.record?.requestedAt)
        XCTAssertEqual(again.record?.renewedAt, f.clock.now(), "a repeated denial renews it for retention")
    }

    func testSwitchingBackOnIsImmediate() throws {
        let f = Fixture()
        let caller = f.caller()
        try f.choose(.denied, "acct-77", by: caller)
        f.clock.advance(ms: 72 * 3_600_000)
        let state = try f.choose(.authorized, "acct-77", by: caller)
        XCTAssertEqual(state.record?.status(at: state.now), .authorized)
        XCTAssertEqual(try status(f, "acct-77", by: caller), .authorized)
    }

    func testADeviceIsASubjectOfItsOwn() throws {
        let f = Fixture { $0.cooldown = 0 }
        let caller = f.caller()
        try f.choose(.denied, "shared-text", kind: .device, by: caller)
        XCTAssertEqual(try status(f, "shared-text", kind: .device, by: caller), .denied)
        XCTAssertEqual(try status(f, "shared-text", kind: .account, by: caller), .authorized)
    }

    func testCallersOfATenantShareOneChoiceThatOtherTenantsNeitherSeeNorChange() throws {
        let f = Fixture { $0.cooldown = 0 }
        let acme = f.caller(tenant: "acme"), acmeOther = f.caller(tenant: "acme"), globex = f.caller(tenant: "globex")
        try f.choose(.denied, "acct-shared", by: acme)
        XCTAssertEqual(try status(f, "acct-shared", by: acmeOther), .denied)  // one person, one choice
        XCTAssertEqual(try status(f, "acct-shared", by: globex), .authorized)
        try f.choose(.authorized, "acct-shared", by: globex)
        XCTAssertEqual(try status(f, "acct-shared", by: acme), .denied, "another tenant cancelled the denial")
        try f.choose(.denied, "acct-shared", by: globex)
        try f.choose(.authorized, "acct-shared", by: acme)
        XCTAssertEqual(try status(f, "acct-shared", by: acme), .authorized)
        XCTAssertEqual(try status(f, "acct-shared", by: globex), .denied)
    }

    func testEachEnvironmentHoldsItsOwnChoices() throws {
        let f = Fixture { $0.cooldown = 0 }
        try f.choose(.denied, "acct-77", by: f.caller())
        XCTAssertEqual(try status(f, "acct-77", by: f.caller(environment: .sandbox)), .authorized)
    }

    func testATenantHoldsAtMostItsCapacityOfDenials() throws {
        let f = Fixture { $0.denialCapacity = 2 }
        let acme = f.caller(tenant: "acme"), globex = f.caller(tenant: "globex")
        try f.choose(.denied, "a-1", by: acme)
        try f.choose(.denied, "a-2", by: acme)
        let reached = f.store.received.authorizations.count
        XCTAssertRejects(.denialCapacity(capacity: 2)) { () throws(Rejection) in try f.choose(.denied, "a-3", by: acme) }
        XCTAssertEqual(f.store.received.authorizations.count, reached, "a refused denial reached the store")
        XCTAssertEqual(f.counter("insightd_throttled_requests_total", ["reason": "denialCapacity"]), 1)
        try f.choose(.denied, "a-1", by: acme)  // repeating a denial that exists is not refused
        try f.choose(.denied, "a-3", by: globex)  // one tenant's denials do not use up another's room
        try f.choose(.authorized, "a-3", by: acme)  // authorizing what was never denied frees nothing
        XCTAssertRejects(.denialCapacity(capacity: 2)) { () throws(Rejection) in try f.choose(.denied, "a-3", by: acme) }
        try f.choose(.authorized, "a-2", by: acme)  // authorizing frees room
        try f.choose(.denied, "a-3", by: acme)
    }

    func testAnUnreadableStoreIsReportedAsUnreadable() {
        let f = Fixture()
        let caller = f.caller()
        f.store.failReads(true)
        XCTAssertRejects(.unreadable(.authorizations)) { () throws(Rejection) in
            try f.useCases.authorization.query(kind: .account, identifier: "acct-77", by: caller)
        }
    }

    func testAChoiceTheStoreCouldNotWriteChangesNothing() throws {
        let f = Fixture { $0.cooldown = 0 }
        let caller = f.caller()
        f.store.failWrites(.overloaded)
        XCTAssertRejects(.store(.overloaded)) { () throws(Rejection) in try f.choose(.denied, "acct-77", by: caller) }
        f.store.failWrites(nil)
        _ = try f.evaluate(Fixture.request(account: "acct-77"), by: caller)
    }
}
