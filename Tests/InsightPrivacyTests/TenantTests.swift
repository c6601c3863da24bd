import Crypto
import DaemonTesting
import Foundation
import InsightControl
import InsightDomain
import InsightStorage
import InsightTesting
import JSON
import SQLiteClient
import XCTest

/// Tenants (docs/api.md): callers of one tenant share labels, opt-outs and device limits; across
/// tenants nothing is shared, affected or revealed. Each test fails if the boundary is removed.
final class TenantTests: XCTestCase {
    static func evaluation(account: String = "acct-shared", device: String = "dev-shared") -> String {
        RequestBodies.subjectEvaluation(account: account, device: device)
    }

    static func label(_ insightId: String, _ outcome: String = "confirmedLegitimate") -> String {
        #"{"labels":[{"insightId":"\#(insightId)","outcome":"\#(outcome)"\#(outcome == "confirmedFraud" ? #","fraudType":"other""# : ""),"discoveredAt":"2026-01-02"}]}"#
    }

    private func status(_ r: TestDaemon.Response) -> String? { r.json?["results"]?[0]?["status"]?.stringValue }

    func testLabelsReachOnlyTheTenantsOwnInsights() throws {
        let daemon = try TestDaemon(.inProcess)
        let acme = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        let acmeFraudOps = try daemon.createCaller(roles: [.labels], tenant: "acme").key
        let globex = try daemon.createCaller(roles: [.labels], tenant: "globex").key
        let byDefault = try daemon.createCaller(roles: [.labels]).key
        let answer = try daemon.request("POST", "/v1/evaluations", key: acme, json: Self.evaluation())
        let insightId = try XCTUnwrap(answer.json?["insights"]?[0]?["insightId"]?.stringValue)

        func label(_ key: String, _ outcome: String, _ idempotency: String) throws -> String? {
            status(
                try daemon.request(
                    "POST", "/v1/labels", key: key, json: Self.label(insightId, outcome),
                    headers: ["Idempotency-Key": idempotency]))
        }
        // Another tenant's insight is unknown to it, before and after its own tenant labels it:
        // never `duplicate` or `conflict`, which would reveal that it exists and how it was labelled.
        XCTAssertEqual(try label(globex, "confirmedFraud", "g-1"), "unknownInsight")
        XCTAssertEqual(try label(acmeFraudOps, "confirmedLegitimate", "a-1"), "accepted")  // inside the tenant: shared
        XCTAssertEqual(try label(globex, "confirmedLegitimate", "g-2"), "unknownInsight")
        XCTAssertEqual(try label(byDefault, "confirmedFraud", "d-1"), "unknownInsight")
        // Every other answer to every tenant is tested at the use case (LabelServiceTests).
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        XCTAssertEqual(try db.scalarText("SELECT count(*) || ' ' || outcome FROM labels"), "1 confirmedLegitimate")
    }

    func testOptOutsBelongToTheirTenant() throws {
        let daemon = try TestDaemon(.inProcess) { $0.authorizationCooldown = 0 }
        let acme = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        let acmeOther = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        let globex = try daemon.createCaller(roles: [.evaluate], tenant: "globex").key
        let subject = #""subject":{"account":"acct-shared"}"#
        func put(_ key: String, _ status: String) throws -> Int {
            try daemon.request("PUT", "/v1/authorization", key: key, json: #"{\#(subject),"status":"\#(status)"}"#).status
        }
        func query(_ key: String) throws -> String? {
            try daemon.request("POST", "/v1/authorization/query", key: key, json: "{\(subject)}").string("status")
        }
        func evaluate(_ key: String) throws -> Int {
            try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluation()).status
        }
        // Who sees and changes which choice is tested at the use case (AuthorizationServiceTests,
        // OptOutTests); here, the answers on the wire and the index rebuilt per tenant.
        XCTAssertEqual(try put(acme, "denied"), 200)
        XCTAssertEqual(try query(acmeOther), "denied")  // inside the tenant: one person, one choice
        XCTAssertEqual(try evaluate(acmeOther), 403)
        XCTAssertEqual(try query(globex), "authorized")  // another tenant does not see it
        XCTAssertEqual(try put(globex, "denied"), 200)  // its own denial is its own
        XCTAssertEqual(try put(acme, "authorized"), 200)
        XCTAssertEqual(try evaluate(acme), 200)
        XCTAssertEqual(try evaluate(globex), 403)
        // The index is rebuilt per tenant after a restart.
        try daemon.restart()
        XCTAssertEqual(try evaluate(acme), 200)
        XCTAssertEqual(try evaluate(globex), 403)
    }

    /// Each tenant hashes under its own derived keys: the database cannot link one person across
    /// tenants, and velocity (keyed by these hashes) counts each tenant apart. Tenant `default`
    /// keeps the keyring's own hashes.
    func testIdentifierHashesAreTenantSpecific() throws {
        let daemon = try TestDaemon(.inProcess)
        for tenant in ["acme", "globex", Tenant.defaultName] {
            let key = try daemon.createCaller(roles: [.evaluate], tenant: tenant).key
            XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluation()).status, 200)
        }
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        let rows = try db.prepare(
            """
            SELECT c.tenant, e.account_hash, e.hash_key_id FROM evaluations e JOIN callers c USING (caller_id) ORDER BY c.tenant
            """
        ).query { ($0.text(0) ?? "", $0.blob(1) ?? [], $0.text(2) ?? "") }
        XCTAssertEqual(rows.map(\.0), ["acme", Tenant.defaultName, "globex"])
        XCTAssertEqual(Set(rows.map(\.1)).count, 3, "one person has the same hash in two tenants")
        XCTAssertEqual(Set(rows.map(\.2)).count, 3)
        let keyring = daemon.service.hashKeys.current
        XCTAssertEqual(rows[1].1, keyring.active.hash("acct-shared", kind: .account), "tenant default's hashes changed")
        XCTAssertEqual(rows[0].1, keyring.forTenant("acme").active.hash("acct-shared", kind: .account))
    }

    func testAnAdminSeesAndChangesOnlyItsTenant() throws {
        let daemon = try TestDaemon(.inProcess)
        let acmeAdmin = try daemon.createCaller(roles: [.admin], tenant: "acme").key
        let acmeCaller = try daemon.createCaller(roles: [.evaluate], tenant: "acme").callerId
        let globexCaller = try daemon.createCaller(roles: [.evaluate], tenant: "globex").callerId
        let defaultCaller = try daemon.createCaller(roles: [.evaluate]).callerId

        let list = try daemon.request("GET", "/admin/v1/callers", key: acmeAdmin)
        XCTAssertEqual(list.status, 200)
        let tenants = Set((list.json?["callers"]?.arrayValue ?? []).compactMap { $0["tenant"]?.stringValue })
        XCTAssertEqual(tenants, ["acme"])
        XCTAssertEqual(list.json?["callers"]?.arrayValue?.count, 2)
        XCTAssertEqual(try daemon.request("GET", "/admin/v1/callers/\(acmeCaller)", key: acmeAdmin).status, 200)
        for other in [globexCaller, defaultCaller] {
            XCTAssertEqual(try daemon.request("GET", "/admin/v1/callers/\(other)", key: acmeAdmin).status, 404)
            XCTAssertEqual(try daemon.request("PATCH", "/admin/v1/callers/\(other)", key: acmeAdmin, json: #"{"rate":1}"#).status, 404)
            XCTAssertEqual(try daemon.request("GET", "/admin/v1/callers/\(other)/rate-limit", key: acmeAdmin).status, 404)
            XCTAssertEqual(try daemon.request("POST", "/admin/v1/callers/\(other)/rate-limit/reset", key: acmeAdmin).status, 404)
        }
        let db = try Database.open(path: daemon.service.settings.databasePath)
        XCTAssertEqual(try CallerRegistry(db).caller(globexCaller)?.rate, 10_000, "another tenant's caller was changed")
        XCTAssertEqual(try daemon.request("PATCH", "/admin/v1/callers/\(acmeCaller)", key: acmeAdmin, json: #"{"rate":5}"#).status, 200)
    }

    /// A tenant's admin can change its callers' quotas, itself included, but not past the
    /// ceiling the operator set on the tenant; setting it lowers the callers above it, and other
    /// tenants are not bound by it.
    func testTenantAdminsCannotRaiseQuotasPastTheOperatorsCeiling() throws {
        let daemon = try TestDaemon(.inProcess)
        let acme = try daemon.createCaller(roles: [.admin, .evaluate], tenant: "acme", rate: 10, burst: 20)
        let busy = try daemon.createCaller(roles: [.evaluate], tenant: "acme", rate: 500, burst: 1000)
        let globex = try daemon.createCaller(roles: [.admin], tenant: "globex", rate: 10, burst: 20)
        func patch(_ caller: (callerId: String, key: String), _ body: String) throws -> TestDaemon.Response {
            try daemon.request("PATCH", "/admin/v1/callers/\(caller.callerId)", key: caller.key, json: body)
        }
        // With no ceiling, an admin may raise itself to the most the API allows.
        XCTAssertEqual(try patch(acme, #"{"rate":1000000}"#).status, 200)
        let ctl = captureStandardOutput {
            AdminCommand.main(
                arguments: [
                    "insightctl", "--state-dir", daemon.service.settings.stateDirectory, "tenants", "update", "acme",
                    "--max-rate", "50", "--max-burst", "100", "--json"
                ], environment: [:])
        }
        XCTAssertEqual(ctl.status, 0, ctl.output)
        let answer = try XCTUnwrap(try JSONParser.parse(Array(ctl.output.utf8)).objectValue)
        XCTAssertEqual(answer["callersLowered"]?.numberValue, 2, "the admin at 1000000/s and the caller at 500/s")
        let lowered = try daemon.request("GET", "/admin/v1/callers/\(busy.callerId)", key: acme.key)
        XCTAssertEqual(lowered.json?["rate"]?.numberValue, 50)
        XCTAssertEqual(lowered.json?["burst"]?.numberValue, 100)

        let tooFast = try patch(acme, #"{"rate":51}"#)
        XCTAssertEqual(tooFast.status, 422)
        XCTAssertEqual(tooFast.string("field"), "rate")
        XCTAssertTrue(tooFast.string("detail")?.contains("ceiling of 50 per second") == true, tooFast.string("detail") ?? "")
        let tooBig = try patch(acme, #"{"burst":101}"#)
        XCTAssertEqual(tooBig.status, 422)
        XCTAssertEqual(tooBig.string("field"), "burst")
        XCTAssertEqual(try patch(acme, #"{"rate":50,"burst":100}"#).status, 200, "the ceiling itself is allowed")
        XCTAssertEqual(try daemon.request("GET", "/admin/v1/callers/\(acme.callerId)", key: acme.key).json?["rate"]?.numberValue, 50)
        XCTAssertEqual(try patch(globex, #"{"rate":1000000}"#).status, 200, "another tenant is not bound by acme's ceiling")

        XCTAssertEqual(
            AdminCommand.main(
                arguments: [
                    "insightctl", "--state-dir", daemon.service.settings.stateDirectory, "tenants", "update",
                    "acme", "--max-rate", "none"
                ], environment: [:]), 0)
        XCTAssertEqual(try patch(acme, #"{"rate":51}"#).status, 200, "the rate ceiling was removed")
        XCTAssertEqual(try patch(acme, #"{"burst":101}"#).status, 422, "the burst ceiling stays")
    }

    func testTenantNamesAreValidated() throws {
        let daemon = try TestDaemon(.inProcess)
        for bad in ["", "Acme", "acme corp", "-acme", String(repeating: "a", count: 64), "acme@example.com"] {
            XCTAssertThrowsError(try daemon.createCaller(roles: [.evaluate], tenant: bad), "accepted tenant '\(bad)'")
        }
        XCTAssertNoThrow(try daemon.createCaller(roles: [.evaluate], tenant: "bank-1.eu_west"))
    }
}

/// Every request that makes the daemon keep something costs quota, and what one tenant can make
/// it keep is bounded (issue: hostile callers).
final class WriteQuotaTests: XCTestCase {
    func testAuthorizationChangesAndLabelBatchesCostQuota() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate, .labels], rate: 0.001, burst: 5).key
        var statuses: [Int] = []
        for i in 0..<7 {
            statuses.append(
                try daemon.request(
                    "PUT", "/v1/authorization", key: key,
                    json: #"{"subject":{"account":"a-\#(i)"},"status":"authorized"}"#
                ).status)
        }
        XCTAssertEqual(statuses, [200, 200, 200, 200, 200, 429, 429])
        let label = try daemon.request(
            "POST", "/v1/labels", key: key, json: TenantTests.label("unknown-id"),
            headers: ["Idempotency-Key": "q-1"])
        XCTAssertEqual(label.status, 429)
        XCTAssertEqual(label.code, "rateLimitExceeded")
        XCTAssertNotNil(label.headers["retry-after"])
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: TenantTests.evaluation()).status, 429)
    }

    /// An evaluation takes its token with the rest it asks of the limits (the use case's gate);
    /// one refused before that — a malformed body, a sandbox override from a production caller —
    /// costs its token all the same, and a throttled caller is told so rather than what else is
    /// wrong.
    func testEvaluationsRefusedEarlyCostTheirTokenAndThrottlingIsSaidFirst() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate], rate: 0.001, burst: 5).key
        var statuses: [Int] = []
        statuses.append(try daemon.request("POST", "/v1/evaluations", key: key, json: #"{"operationCategory":"payment""#).status)
        statuses.append(
            try daemon.request(
                "POST", "/v1/evaluations", key: key, json: TenantTests.evaluation(),
                headers: ["Insight-Override": "value=high"]
            ).status)
        for _ in 0..<3 {
            statuses.append(try daemon.request("POST", "/v1/evaluations", key: key, json: TenantTests.evaluation()).status)
        }
        XCTAssertEqual(statuses, [400, 403, 200, 200, 200])
        let malformed = try daemon.request("POST", "/v1/evaluations", key: key, json: #"{"operationCategory":"payment""#)
        XCTAssertEqual(malformed.status, 429, "throttled first, whatever else is wrong")
        XCTAssertEqual(malformed.code, "rateLimitExceeded")
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: TenantTests.evaluation()).status, 429)
    }

    func testLabelBatchesThatChangeNothingAreNotKept() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.labels]).key
        for i in 0..<20 {
            let r = try daemon.request(
                "POST", "/v1/labels", key: key, json: TenantTests.label("5d1e0000-0000-4000-8000-00000000000\(i % 10)"),
                headers: ["Idempotency-Key": "unknown-\(i)"])
            XCTAssertEqual(r.json?["results"]?[0]?["status"]?.stringValue, "unknownInsight")
        }
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM label_submissions"), "0")
    }

    func testATenantHoldsAtMostItsShareOfDenials() throws {
        let daemon = try TestDaemon(.inProcess) { $0.maxDenialsPerTenant = 2 }
        let acme = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        let globex = try daemon.createCaller(roles: [.evaluate], tenant: "globex").key
        func deny(_ key: String, _ account: String) throws -> TestDaemon.Response {
            try daemon.request("PUT", "/v1/authorization", key: key, json: #"{"subject":{"account":"\#(account)"},"status":"denied"}"#)
        }
        XCTAssertEqual(try deny(acme, "a-1").status, 200)
        XCTAssertEqual(try deny(acme, "a-2").status, 200)
        let refused = try deny(acme, "a-3")
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.object?["reason"]?.stringValue, "denialCapacity")
        XCTAssertEqual(try deny(acme, "a-1").status, 200, "repeating a denial that exists must not be refused")
        XCTAssertEqual(try deny(globex, "a-3").status, 200, "one tenant's denials used up another's room")
        // Authorizing frees room.
        XCTAssertEqual(
            try daemon.request(
                "PUT", "/v1/authorization", key: acme,
                json: #"{"subject":{"account":"a-2"},"status":"authorized"}"#
            ).status, 200)
        XCTAssertEqual(try deny(acme, "a-3").status, 200)
        // Operators see each tenant's count approach the cap.
        let text = try daemon.scrape()
        let samples = try MetricSample.parse(text).filter { $0.name == "insightd_denials" }
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: samples.map { ($0.labels["tenant"] ?? "?", $0.value) }), ["acme": 2, "globex": 1])
        XCTAssertEqual(Set(samples.compactMap { $0.labels["environment"] }), ["production"])
    }

    /// An opt-out nobody renewed for the retention period is purged from the store and from the
    /// index in memory; one the person renewed stays, with its cooldown unchanged.
    func testRetentionPurgesOptOutsNotRenewed() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock) {
            $0.retentionDays = 30
            $0.authorizationCooldown = 0
        }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        func deny(_ account: String) throws -> TestDaemon.Response {
            try daemon.request("PUT", "/v1/authorization", key: key, json: #"{"subject":{"account":"\#(account)"},"status":"denied"}"#)
        }
        func evaluate(_ account: String) throws -> Int {
            try daemon.request("POST", "/v1/evaluations", key: key, json: TenantTests.evaluation(account: account, device: account)).status
        }
        let first = try deny("kept")
        XCTAssertEqual(try deny("dropped").status, 200)
        clock.advance(seconds: 20 * 86_400)
        let renewed = try deny("kept")
        XCTAssertEqual(renewed.string("requestedAt"), first.string("requestedAt"), "a repeated denial restarted the cooldown")
        clock.advance(seconds: 11 * 86_400)
        XCTAssertEqual(try evaluate("dropped"), 403)

        let done = expectation(description: "purged")
        let totals = ReportBox()
        daemon.service.purgeExpired { report in
            totals.report = report; done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(totals.report?.authorizations, 1)
        XCTAssertEqual(try evaluate("dropped"), 200, "a purged denial still held in memory")
        XCTAssertEqual(try evaluate("kept"), 403, "a renewed denial was purged")
        try daemon.restart()
        XCTAssertEqual(try evaluate("dropped"), 200)
        XCTAssertEqual(try evaluate("kept"), 403)
    }
}
