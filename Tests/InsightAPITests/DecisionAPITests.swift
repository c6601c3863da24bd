import DaemonTesting
import Foundation
import InsightApp
@testable import InsightControl
import InsightDomain
import InsightStorage
import JSON
import XCTest

/// Decisions on the wire (docs/decisions.md): the `initiator` member and its refusals, the
/// `decision` of every `200` (sandbox-forced values included) and what is stored of it, a policy
/// file, its reload (a bad one keeps the policy in force), the shadow policy and the metrics.
final class DecisionAPITests: XCTestCase {
    static func body(category: String = "payment", initiator: String? = nil, transaction: String? = nil) -> String {
        var body = #"{"operationCategory":"\#(category)","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]"#
        if let transaction { body += #","transaction":\#(transaction)"# }
        if let initiator { body += #","initiator":\#(initiator)"# }
        return body + "}"
    }

    static let agentNotRequested =
        #"{"kind":"agent","agent":{"userRequested":false,"untrustedContext":["email","web"],"argumentsFromUntrustedContext":true,"sideEffects":["financial"]}}"#
    static let agentFromEmail =
        #"{"kind":"agent","agent":{"userRequested":true,"untrustedContext":["email"],"argumentsFromUntrustedContext":true,"sideEffects":["financial"]}}"#

    private func decision(_ response: TestDaemon.Response, file: StaticString = #filePath, line: UInt = #line) -> [String] {
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self), file: file, line: line)
        guard let decision = response.json?["decision"] else { return ["no decision"] }
        return [decision["action"]?.stringValue ?? "-", decision["policyVersion"]?.stringValue ?? "-"]
            + (decision["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? ["no reasons"])
    }

    func testEveryAnswerCarriesTheDefaultPolicysDecisionAndItIsStored() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        // No model loaded: no coaching value, so a person's payment proceeds.
        let person = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body())
        XCTAssertEqual(decision(person), ["proceed", "default-1"])
        let blocked = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(initiator: Self.agentNotRequested))
        XCTAssertEqual(decision(blocked), ["block", "default-1", "agentNotRequestedByPerson"])
        let outOfBand = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(initiator: Self.agentFromEmail))
        XCTAssertEqual(decision(outOfBand), ["confirmOutOfBand", "default-1", "agentArgumentsFromUntrustedContext"])
        // The action, reasons and policy version are stored with the evaluation, and nothing of
        // the initiator's facts.
        let db = try Database.open(path: daemon.service.settings.databasePath)
        let rows = try db.prepare("SELECT event_id, decision_action, decision_reasons, policy_version FROM evaluations")
            .query { "\($0.text(0) ?? "-") \($0.int(1)) \($0.text(2) ?? "NULL") \($0.text(3) ?? "NULL")" }
        let ids = [person, blocked, outOfBand].map { $0.json?["eventId"]?.stringValue ?? "" }
        XCTAssertEqual(
            Set(rows),
            [
                "\(ids[0]) 0 NULL default-1", "\(ids[1]) 3 agentNotRequestedByPerson default-1",
                "\(ids[2]) 2 agentArgumentsFromUntrustedContext default-1"
            ])
    }

    func testAForcedValueGetsTheDecisionThePolicyGivesForIt() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        let key = try daemon.createCaller(roles: [.evaluate], environment: .sandbox).key
        func forced(_ value: String, initiator: String? = nil) throws -> [String] {
            decision(
                try daemon.request(
                    "POST", "/v1/evaluations", key: key, json: Self.body(initiator: initiator),
                    headers: ["Insight-Override": "isLikelyBeingCoached=\(value)"]))
        }
        XCTAssertEqual(try forced("unknown"), ["proceed", "default-1"])
        XCTAssertEqual(try forced("medium"), ["confirm", "default-1", "coachingMedium"])
        XCTAssertEqual(try forced("high"), ["confirmOutOfBand", "default-1", "coachingHigh"])
        XCTAssertEqual(
            try forced("high", initiator: #"{"kind":"agent","agent":{"userRequested":true}}"#),
            ["block", "default-1", "agentWhileCoachingHigh"])
        XCTAssertEqual(try forced("error:insightUnavailable"), ["proceed", "default-1"], "a forced error is no coaching value")
        // The transaction is read: a coached payment of a high amount to a new counterparty.
        XCTAssertEqual(
            decision(
                try daemon.request(
                    "POST", "/v1/evaluations", key: key,
                    json: Self.body(transaction: #"{"newCounterparty":true,"amountBand":"high"}"#),
                    headers: ["Insight-Override": "isLikelyBeingCoached=medium"])),
            ["confirmOutOfBand", "default-1", "coachedPaymentToNewCounterpartyHighAmount"])
    }

    func testUnknownInitiatorValuesAreContextInvalidNamingTheField() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let cases: [(initiator: String, field: String)] = [
            (#"{"kind":"robot"}"#, "initiator.kind"),
            (#"{"kind":"agent","agent":{"sideEffects":["financial","teleport"]}}"#, "initiator.agent.sideEffects[1]"),
            (#"{"agent":{"untrustedContext":["sms"]}}"#, "initiator.agent.untrustedContext[0]"),
            (#"{"agent":{"untrustedContext":"email"}}"#, "initiator.agent.untrustedContext"),
            (#"{"agent":{"userRequested":"yes"}}"#, "initiator.agent.userRequested"),
            (#"{"agent":{"tool":"payBill"}}"#, "initiator.agent.tool"),
            (#"{"kind":"agent","reason":"free text"}"#, "initiator.reason"),
            (#""agent""#, "initiator")
        ]
        for (initiator, field) in cases {
            let r = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(initiator: initiator))
            XCTAssertEqual(r.status, 422, initiator)
            XCTAssertEqual(r.code, "contextInvalid", initiator)
            XCTAssertEqual(r.string("field"), field, initiator)
            XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains("teleport"), "the refused value is echoed")
            XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains("payBill"), "the unknown member is echoed")
        }
    }

    private func write(_ text: String, to name: String, in daemon: TestDaemon? = nil) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    static let accountsBlocked = """
        {"policyVersion": "bank-7"}
        {"id": "accountChangesBlocked", "when": {"category": ["account"]}, "action": "block"}

        """

    func testAPolicyFileIsUsedAndAReloadWithABadOneKeepsIt() throws {
        let path = try write(Self.accountsBlocked, to: "policy.jsonl")
        let daemon = try TestDaemon(.inProcess) { $0.decisionPolicyFile = path }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        func decide(_ category: String) throws -> [String] {
            decision(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(category: category)))
        }
        XCTAssertEqual(try decide("account"), ["block", "bank-7", "accountChangesBlocked"])
        XCTAssertEqual(try decide("payment"), ["proceed", "bank-7"])
        // A file that does not parse: the reload says which line, and the policy in force stays.
        try #"{"policyVersion": "bank-8"}"#.appending("\n{\"id\": \"x\", \"action\": \"deny\"}\n")
            .write(toFile: path, atomically: false, encoding: .utf8)
        XCTAssertThrowsError(try daemon.service.reloadDecisionPolicies()) { error in
            XCTAssertEqual(
                "\(error)",
                "decision policy \(path): line 2: action: unknown action \"deny\" (known: proceed, confirm, confirmOutOfBand, block)")
        }
        XCTAssertEqual(try decide("account"), ["block", "bank-7", "accountChangesBlocked"])
        try FileManager.default.removeItem(atPath: path)
        XCTAssertThrowsError(try daemon.service.reloadDecisionPolicies()) { error in
            XCTAssertTrue("\(error)".hasPrefix("cannot read the decision policy \(path)"), "\(error)")
        }
        XCTAssertEqual(try decide("account"), ["block", "bank-7", "accountChangesBlocked"])
        // A good file is swapped in without a restart.
        try Self.accountsBlocked.replacingOccurrences(of: "bank-7", with: "bank-8").replacingOccurrences(of: "block", with: "confirm")
            .write(toFile: path, atomically: false, encoding: .utf8)
        try daemon.service.reloadDecisionPolicies()
        XCTAssertEqual(try decide("account"), ["confirm", "bank-8", "accountChangesBlocked"])
        let log = String(decoding: try daemon.logText(), as: UTF8.self)
        XCTAssertTrue(log.contains(#""msg":"decision policy loaded""#) && log.contains(#""policyVersion":"bank-8""#), log)
    }

    func testABadPolicyFileStopsTheStartAndCheckConfig() throws {
        let path = try write(
            "{\"policyVersion\": \"v\"}\n{\"id\": \"a\", \"when\": {\"colour\": [\"red\"]}, \"action\": \"block\"}\n",
            to: "bad.jsonl")
        XCTAssertThrowsError(try TestDaemon(.inProcess) { $0.decisionPolicyFile = path }) { error in
            XCTAssertTrue("\(error)".contains("line 2: when: unknown fact \"colour\""), "\(error)")
        }
        XCTAssertThrowsError(try TestDaemon(.inProcess) { $0.decisionPolicyShadowFile = path }) { error in
            XCTAssertTrue("\(error)".contains("line 2"), "\(error)")
        }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("cc-\(UUID().uuidString)").path
        XCTAssertEqual(
            Daemon.main(
                arguments: ["insightd", "--check-config"],
                environment: ["INSIGHTD_STATE_DIR": state, "INSIGHTD_DECISION_POLICY": path]), 78)
        XCTAssertEqual(
            Daemon.main(
                arguments: ["insightd", "--check-config"],
                environment: ["INSIGHTD_STATE_DIR": state, "INSIGHTD_DECISION_POLICY_SHADOW": path]), 78)
        let good = try write(DecisionPolicy.defaultText, to: "good.jsonl")
        XCTAssertEqual(
            Daemon.main(
                arguments: ["insightd", "--check-config"],
                environment: [
                    "INSIGHTD_STATE_DIR": state, "INSIGHTD_DECISION_POLICY": good,
                    "INSIGHTD_DECISION_POLICY_SHADOW": good
                ]), 0)
    }

    func testTheShadowPolicyIsCountedNeverAnsweredAndDecisionsAreCounted() throws {
        let shadow = try write(
            Self.accountsBlocked.replacingOccurrences(of: "\"account\"", with: "\"account\", \"payment\""),
            to: "shadow.jsonl")
        let daemon = try TestDaemon(.inProcess) { $0.decisionPolicyShadowFile = shadow }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        for _ in 0..<3 {
            XCTAssertEqual(decision(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body())), ["proceed", "default-1"])
        }
        XCTAssertEqual(
            decision(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(initiator: Self.agentNotRequested))),
            ["block", "default-1", "agentNotRequestedByPerson"])
        let metrics = try daemon.scrape()
        for line in [
            #"insightd_decision_shadow_disagreements_total{tenant="default",environment="production",rule="accountChangesBlocked",shadow_action="block",action="proceed"} 3"#,
            #"insightd_decision_shadow_disagreements_total{tenant="default",environment="production",rule="accountChangesBlocked",shadow_action="block",action="block"} 1"#,
            #"insightd_decisions_total{environment="production",category="payment",initiator="person",action="proceed"} 3"#,
            #"insightd_decisions_total{environment="production",category="payment",initiator="agent",action="block"} 1"#
        ] {
            XCTAssertTrue(metrics.contains(line), "\(line)\n\(metrics)")
        }
        // Where both agree, nothing is counted.
        let same = try write(DecisionPolicy.defaultText, to: "same.jsonl")
        let agreeing = try TestDaemon(.inProcess) { $0.decisionPolicyShadowFile = same }
        let agreeingKey = try agreeing.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(try agreeing.request("POST", "/v1/evaluations", key: agreeingKey, json: Self.body()).status, 200)
        XCTAssertFalse(
            try agreeing.scrape()
                .contains("insightd_decision_shadow_disagreements_total{"))
    }

    func testTheAdminViewShowsCallersThatProceededWhereThePolicySaidOtherwise() throws {
        let daemon = try TestDaemon(.inProcess)
        let (callerId, key) = try daemon.createCaller(roles: [.evaluate], name: "payments")
        let admin = try daemon.createCaller(roles: [.admin]).key
        let otherAdmin = try daemon.createCaller(roles: [.admin], tenant: "other").key
        func evaluate(_ initiator: String?) throws -> String {
            let r = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(initiator: initiator))
            XCTAssertEqual(r.status, 200)
            return r.json?["eventId"]?.stringValue ?? ""
        }
        let blocked = try evaluate(Self.agentNotRequested), outOfBand = try evaluate(Self.agentFromEmail)
        _ = try evaluate(nil)
        for (event, status) in [(blocked, "usedUnchangedFriction"), (outOfBand, "usedIncreasedFriction")] {
            XCTAssertEqual(
                try daemon.request(
                    "POST", "/v1/evaluations/\(event)/consumption", key: key,
                    json: #"{"status":"\#(status)"}"#
                ).status, 204)
        }
        let r = try daemon.request("GET", "/admin/v1/decisions", key: admin)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let callers = try XCTUnwrap(r.json?["callers"]?.arrayValue)
        XCTAssertEqual(callers.count, 1)
        let entry = callers[0]
        XCTAssertEqual(entry["callerId"]?.stringValue, callerId)
        XCTAssertEqual(entry["name"]?.stringValue, "payments")
        XCTAssertEqual(entry["proceededAgainstPolicy"], .number(1))
        XCTAssertEqual(
            entry["actions"]?["block"],
            .object([
                "evaluations": .number(1), "reported": .number(1), "proceeded": .number(1),
                "statuses": .object(["usedUnchangedFriction": .number(1)]), "interventions": .object([:])
            ]))
        XCTAssertEqual(
            entry["actions"]?["confirmOutOfBand"],
            .object([
                "evaluations": .number(1), "reported": .number(1),
                "proceeded": .number(0),
                "statuses": .object(["usedIncreasedFriction": .number(1)]), "interventions": .object([:])
            ]))
        XCTAssertEqual(entry["actions"]?["proceed"]?["evaluations"], .number(1))
        XCTAssertEqual(entry["actions"]?["proceed"]?["reported"], .number(0))
        XCTAssertEqual(entry["actions"]?["confirm"]?["evaluations"], .number(0))
        XCTAssertEqual(try daemon.request("GET", "/admin/v1/decisions?days=400", key: admin).json?["callers"]?.arrayValue?.count, 1)
        // Another tenant's admin sees none of it; a bad period names `days`; other roles are refused.
        XCTAssertEqual(try daemon.request("GET", "/admin/v1/decisions", key: otherAdmin).json?["callers"], .array([]))
        for query in ["days=0", "days=401", "days=x", "from=2026-01-01", "days=7&days=8"] {
            let refused = try daemon.request("GET", "/admin/v1/decisions?\(query)", key: admin)
            XCTAssertEqual(refused.status, 422, query)
            XCTAssertEqual(refused.string("field"), "days", query)
        }
        XCTAssertEqual(try daemon.request("GET", "/admin/v1/decisions", key: key).status, 403)
    }

    func testPolicyTestReplaysCasesAndMarksMismatches() throws {
        let cases = try write(
            """
            # a comment, then cases
            {"coaching": "high", "initiator": {"kind": "agent"}, "expect": "block"}
            {"initiator": {"agent": {"userRequested": true, "untrustedContext": ["email"], "sideEffects": ["financial"]}}, "expect": "confirm", "expectReasons": ["agentUntrustedContext"]}

            {"category": "account", "expect": "proceed"}
            {"coaching": "medium", "transaction": {"newCounterparty": true, "amountBand": "high"}, "velocity": ["sharedDevice"]}
            """, to: "cases.jsonl")
        let report = try PolicyTest.replay(cases: cases, policy: nil)
        XCTAssertEqual(
            report.lines,
            [
                "line 2: block agentWhileCoachingHigh", "line 3: confirm agentUntrustedContext",
                "line 5: proceed", "line 6: confirmOutOfBand coachedPaymentToNewCounterpartyHighAmount",
                "4 cases, policy default-1"
            ])
        XCTAssertEqual(report.mismatches, 0)
        // Another policy answers otherwise: the cases that expected the default's answer say so.
        let policy = try write(Self.accountsBlocked, to: "policy.jsonl")
        let other = try PolicyTest.replay(cases: cases, policy: policy)
        XCTAssertEqual(
            other.lines,
            [
                "line 2: proceed  MISMATCH: expected block", "line 3: proceed  MISMATCH: expected confirm agentUntrustedContext",
                "line 5: block accountChangesBlocked  MISMATCH: expected proceed", "line 6: proceed",
                "4 cases, policy bank-7, 3 mismatched"
            ])
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "policy", "test", cases, "--policy", policy], environment: [:]), 1)
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "policy", "test", cases], environment: [:]), 0)
        // A bad case names its line and field; a bad policy its line.
        let bad = try write(#"{"coaching": "low"}"# + "\n" + #"{"initiator": {"agent": {"sideEffects": ["teleport"]}}}"#, to: "bad.jsonl")
        XCTAssertThrowsError(try PolicyTest.replay(cases: bad, policy: nil)) { error in
            XCTAssertEqual("\(error)", "\(bad): line 1: coaching: must be one of unknown, medium, high")
        }
        let badAgent = try write(#"{"initiator": {"agent": {"sideEffects": ["teleport"]}}}"#, to: "bad-agent.jsonl")
        XCTAssertThrowsError(try PolicyTest.replay(cases: badAgent, policy: nil)) { error in
            XCTAssertTrue("\(error)".hasPrefix("\(badAgent): line 1: initiator.agent.sideEffects[0]: must be one of financial"), "\(error)")
        }
        let badPolicy = try write("{\"policyVersion\": \"v\"}\n{\"id\": \"a\", \"action\": \"allow\"}\n", to: "bad-policy.jsonl")
        XCTAssertThrowsError(try PolicyTest.replay(cases: cases, policy: badPolicy)) { error in
            XCTAssertTrue("\(error)".contains("line 2: action: unknown action \"allow\""), "\(error)")
        }
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "policy", "test"], environment: [:]), 1)
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "policy", "test", "/nonexistent/cases.jsonl"], environment: [:]), 1)
    }
}
