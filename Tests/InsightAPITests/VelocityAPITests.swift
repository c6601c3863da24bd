import DaemonTesting
import Foundation
import InsightDomain
import InsightTesting
import JSON
import XCTest

/// Scripted histories through the live API (issue 4): escalations and reasons as answered, the
/// rule counter in `/metrics`, counters that survive a restart, and the policy file. The rules
/// themselves, and the sandbox kept apart, are tested at the use case (InsightServicesTests).
final class VelocityAPITests: XCTestCase {
    var clock: ManualClock!
    var daemon: TestDaemon!
    var key = ""

    override func setUpWithError() throws {
        clock = ManualClock(SystemClock().now())
        daemon = try TestDaemon(.inProcess, clock: clock) { $0.modelsDirectory = TestDaemon.committedModels }
        key = try daemon.createCaller(roles: [.evaluate]).key
    }

    override func tearDown() { daemon = nil }

    /// Evaluates a payment with no interaction (the model alone answers `unknown`).
    func evaluate(
        account: String, device: String? = nil, payee: String? = nil, category: String = "payment",
        key: String? = nil, override: String? = nil
    ) throws -> (value: String?, reasons: [String]) {
        var subject = #""account":"\#(account)""#
        if let device { subject += #","device":"\#(device)""# }
        if let payee { subject += #","counterparty":"\#(payee)""# }
        let r = try daemon.request(
            "POST", "/v1/evaluations", key: key ?? self.key,
            json:
                #"{"operationCategory":"\#(category)","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{\#(subject)}}"#,
            headers: override.map { ["Insight-Override": $0] } ?? [:])
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let insight = r.json?["insights"]?[0]
        return (insight?["outcome"]?["value"]?.stringValue, insight?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    func testOneAccountPayingManyNewPayeesIsEscalatedAndSurvivesARestart() throws {
        for i in 0..<4 {
            XCTAssertEqual(try evaluate(account: "acct-1", device: "dev-1", payee: "payee-\(i)").value, "unknown", "payment \(i)")
            clock.advance(seconds: 60)
        }
        let fifth = try evaluate(account: "acct-1", device: "dev-1", payee: "payee-4")
        XCTAssertEqual(fifth.value, "medium")
        XCTAssertTrue(fifth.reasons.contains("newCounterpartyVelocity"), "\(fifth.reasons)")
        // Restart midway: the counters are rebuilt from the store.
        try daemon.restart()
        let sixth = try evaluate(account: "acct-1", device: "dev-1", payee: "payee-5")
        XCTAssertEqual(sixth.value, "medium")
        XCTAssertTrue(sixth.reasons.contains("newCounterpartyVelocity"), "\(sixth.reasons)")
        // Paying a known payee again is not new.
        let known = try evaluate(account: "acct-1", device: "dev-1", payee: "payee-0")
        XCTAssertFalse(known.reasons.contains("newCounterpartyVelocity"), "\(known.reasons)")
        XCTAssertEqual(known.value, "unknown")
        // Another account is unaffected.
        XCTAssertEqual(try evaluate(account: "acct-2", device: "dev-2", payee: "payee-0").value, "unknown")
    }

    func testTheTenthEvaluationOfAnAccountIsRaisedAndTheRuleCounted() throws {
        for _ in 0..<9 { _ = try evaluate(account: "busy") }
        let tenth = try evaluate(account: "busy")
        XCTAssertEqual(tenth.value, "medium")
        XCTAssertTrue(tenth.reasons.contains("accountVelocity"))
        let metrics = try daemon.scrape()
        XCTAssertTrue(
            metrics.contains(
                #"insightd_velocity_rules_total{tenant="default",environment="production",rule="accountVelocity",mode="enforce"}"#), metrics
        )
    }

    func testShadowPolicyFromAFile() throws {
        let policy = daemon.directory.appendingPathComponent("policy.json")
        try #"{"version":1,"rules":{"accountVelocity":{"mode":"shadow","threshold":3,"window":"1h"}}}"#
            .write(to: policy, atomically: false, encoding: .utf8)
        let shadowed = try TestDaemon(.inProcess, clock: clock) {
            $0.velocityPolicyFile = policy.path
            $0.modelsDirectory = TestDaemon.committedModels
        }
        let key = try shadowed.createCaller(roles: [.evaluate]).key
        let body =
            #"{"operationCategory":"account","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"s"}}"#
        for _ in 0..<5 { XCTAssertEqual(try shadowed.request("POST", "/v1/evaluations", key: key, json: body).status, 200) }
        let metrics = try shadowed.scrape()
        XCTAssertTrue(
            metrics.contains(
                #"insightd_velocity_rules_total{tenant="default",environment="production",rule="accountVelocity",mode="shadow"} 3"#),
            metrics.split(separator: "\n").filter { $0.contains("velocity") }.joined(separator: "\n"))
        try "{\"version\":1,\"rules\":{\"nope\":{}}}".write(to: policy, atomically: false, encoding: .utf8)
        XCTAssertThrowsError(try TestDaemon(.inProcess) { $0.velocityPolicyFile = policy.path }) { error in
            XCTAssertTrue("\(error)".contains("velocity policy"), "\(error)")
        }
    }
}
