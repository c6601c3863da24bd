import Crypto
import DaemonTesting
import Foundation
import InsightApp
import InsightControl
import InsightDomain
import InsightStorage
import InsightTesting
import JSON
import SQLiteClient
import XCTest

/// Subject authorization with its cooldown, hash-key rotation, retention and investigations.
final class PrivacyTests: XCTestCase {
    static let evaluate =
        #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"acct-77"}}"#

    func put(_ daemon: TestDaemon, _ key: String, _ status: String, account: String = "acct-77") throws -> TestDaemon.Response {
        try daemon.request("PUT", "/v1/authorization", key: key, json: #"{"subject":{"account":"\#(account)"},"status":"\#(status)"}"#)
    }

    func query(_ daemon: TestDaemon, _ key: String, account: String = "acct-77") throws -> String? {
        try daemon.request("POST", "/v1/authorization/query", key: key, json: #"{"subject":{"account":"\#(account)"}}"#)
            .json?["status"]?.stringValue
    }

    func testDenialTakesEffectAfterTheCooldownAndAuthorizationAtOnce() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(try query(daemon, key), "authorized")

        let denied = try put(daemon, key, "denied")
        XCTAssertEqual(denied.status, 200)
        XCTAssertEqual(denied.json?["status"]?.stringValue, "denialPending")
        let effective = try XCTUnwrap(denied.json?["effectiveAt"]?.stringValue)
        XCTAssertEqual(effective, Timestamp.format(clock.now() + 259_200_000))
        // During the cooldown evaluations continue.
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 200)
        // Asking again does not restart the cooldown.
        clock.advance(seconds: 3600)
        XCTAssertEqual(try put(daemon, key, "denied").json?["effectiveAt"]?.stringValue, effective)
        clock.advance(seconds: 259_200 - 3601)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 200)
        clock.advance(seconds: 1)
        let refused = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate)
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(refused.code, "denied")
        XCTAssertEqual(try query(daemon, key), "denied")
        // That other subjects and the sandbox are unaffected is tested at the use case (OptOutTests).

        // Switching back on is immediate.
        XCTAssertEqual(try put(daemon, key, "authorized").json?["status"]?.stringValue, "authorized")
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 200)

        // The denial index is rebuilt from the store after a restart.
        XCTAssertEqual(try put(daemon, key, "denied").status, 200)
        clock.advance(seconds: 259_200)
        try daemon.restart()
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 403)
    }

    func testAuthorizationRequestsAreValidated() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let labels = try daemon.createCaller(roles: [.labels]).key
        let cases: [(String, Int, String?)] = [
            (#"{"status":"denied"}"#, 422, "subject"),
            (#"{"subject":{},"status":"denied"}"#, 422, "subject"),
            (#"{"subject":{"account":"a","device":"d"},"status":"denied"}"#, 422, "subject"),
            (#"{"subject":{"counterparty":"c"},"status":"denied"}"#, 422, "subject.counterparty"),
            (#"{"subject":{"account":"a"},"status":"off"}"#, 422, "status"),
            (#"{"subject":{"account":"a"}}"#, 422, "status")
        ]
        for (body, status, field) in cases {
            let r = try daemon.request("PUT", "/v1/authorization", key: key, json: body)
            XCTAssertEqual(r.status, status, body)
            XCTAssertEqual(r.string("field"), field, body)
        }
        XCTAssertEqual(
            try daemon.request(
                "PUT", "/v1/authorization", key: labels,
                json: #"{"subject":{"account":"a"},"status":"denied"}"#
            ).status, 403)
        XCTAssertEqual(try daemon.request("GET", "/v1/authorization", key: key).status, 405)
        XCTAssertEqual(
            try daemon.request(
                "PUT", "/v1/authorization", key: key,
                json: #"{"subject":{"device":"d"},"status":"denied"}"#
            ).status, 200)
    }

    /// A member's name that is not plain and an id that failed validation are the caller's
    /// strings and may carry anything: answers name the object and the member's position, never
    /// the string, and the log never has it either.
    func testUnknownMemberNamesAndRefusedIdsAreNeverEchoedOrLogged() throws {
        let daemon = try TestDaemon(.inProcess)
        let evaluate = try daemon.createCaller(roles: [.evaluate]).key
        let labels = try daemon.createCaller(roles: [.labels]).key
        let (adminId, admin) = try daemon.createCaller(roles: [.admin])
        let card = "secret-account-4111111111111111", email = "jane.doe@example.com"
        let secrets = ["4111111111111111", "jane.doe", "example.com"]
        let root = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]"#
        let events = #""events":[{"t":0,"type":"sessionStart"},{"t":10,"type":"tap"}]"#
        let cases: [(method: String, path: String, key: String, body: String, status: Int, field: String, member: Int?)] = [
            ("POST", "/v1/evaluations", evaluate, root + #","\#(card)":1}"#, 422, "(body)", 3),
            ("POST", "/v1/evaluations", evaluate, root + #","subject":{"account":"a","\#(email)":"x"}}"#, 422, "subject", 2),
            (
                "POST", "/v1/evaluations", evaluate,
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","\#(card)":1,"schemaVersion":1}]}"#,
                422, "insights[0]", 2
            ),
            (
                "POST", "/v1/evaluations", evaluate,
                root + #","interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":1,"\#(card)":"tap"}]}}"#,
                422, "interaction.events[1]", 2
            ),
            // Events read straight from the bytes still count for the position.
            ("POST", "/v1/evaluations", evaluate, root + #","interaction":{\#(events),"\#(card)":1}}"#, 422, "interaction", 2),
            ("POST", "/v1/evaluations", evaluate, root + #","interaction":{"\#(card)":1,\#(events)}}"#, 422, "interaction", 1),
            (
                "POST", "/v1/evaluations", evaluate, root + #","interaction":{"device":{},\#(events),"\#(email)":true}}"#, 422,
                "interaction", 3
            ),
            (
                "POST", "/v1/evaluations", evaluate, root + #","interaction":{"summary":{"sessionSeconds":10,"\#(card)":1}}}"#,
                422, "interaction.summary", 2
            ),
            (
                "POST", "/v1/evaluations", evaluate, root + #","interaction":{"summary":{"\#(email)":"x","sessionSeconds":10}}}"#,
                422, "interaction.summary", 1
            ),
            ("POST", "/v1/evaluations", evaluate, root + #","\#(card)":1,"\#(card)":2}"#, 400, "(body)", nil),
            (
                "POST", "/v1/evaluations/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a20/consumption", evaluate,
                #"{"status":"notUsedNotNeeded","\#(card)":1}"#, 422, "(body)", 2
            ),
            ("PUT", "/v1/authorization", evaluate, #"{"subject":{"account":"a"},"status":"denied","\#(email)":1}"#, 422, "(body)", 3),
            ("POST", "/v1/authorization/query", evaluate, #"{"subject":{"\#(card)":"x"}}"#, 422, "subject", 1),
            ("PATCH", "/admin/v1/callers/\(adminId)", admin, #"{"\#(card)":1,"rate":5}"#, 422, "(body)", 1),
            ("POST", "/v1/labels", labels, #"{"labels":[],"\#(email)":1}"#, 422, "(body)", 2),
            // Interventions: operator codes only; neither a member name nor a refused id is echoed.
            (
                "POST", "/v1/evaluations/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a20/consumption", evaluate,
                #"{"status":"notUsedNotNeeded","intervention":{"kind":"none","\#(card)":1}}"#, 422, "intervention", 2
            ),
            (
                "POST", "/v1/evaluations/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a20/consumption", evaluate,
                #"{"status":"notUsedNotNeeded","intervention":{"kind":"scamWarning","templateId":"\#(email)","templateVersion":1,"shownAt":"2026-01-01T00:00:00Z","response":"proceeded"}}"#,
                422, "intervention.templateId", nil
            ),
            ("POST", "/admin/v1/interventions", admin, #"{"templateId":"w","\#(email)":1}"#, 422, "(body)", 2),
            (
                "POST", "/admin/v1/interventions", admin,
                #"{"templateId":"\#(email)","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"d"}"#, 422,
                "templateId", nil
            )
        ]
        for c in cases {
            let r = try daemon.request(c.method, c.path, key: c.key, json: c.body, headers: ["Idempotency-Key": "k-1"])
            let text = String(decoding: r.body, as: UTF8.self)
            XCTAssertEqual(r.status, c.status, "\(c.body): \(text)")
            XCTAssertEqual(r.code, "contextInvalid", c.body)
            XCTAssertEqual(r.string("field"), c.field, "\(c.body): \(text)")
            if let member = c.member {
                XCTAssertTrue(r.string("detail")?.contains("(member \(member), counting from 1)") == true, "\(c.body): \(text)")
            }
            for secret in secrets { XCTAssertFalse(text.contains(secret), "\(c.body): \(text)") }
        }

        // Labels: a failed item is named by its index and the field's path; an insightId is
        // repeated only when it names an insight of the caller's.
        let evaluation = try daemon.request("POST", "/v1/evaluations", key: evaluate, json: root + "}")
        let insightId = try XCTUnwrap(evaluation.json?["insights"]?[0]?["insightId"]?.stringValue)
        let items = [
            #"{"insightId":"\#(insightId)","outcome":"confirmedLegitimate","discoveredAt":"2026-01-01"}"#,
            #"{"insightId":"\#(card)","outcome":"confirmedLegitimate","discoveredAt":"2026-01-01"}"#,
            #"{"insightId":"\#(email)","outcome":"maybe","discoveredAt":"2026-01-01"}"#,
            #"{"insightId":"\#(insightId)","outcome":"confirmedLegitimate","discoveredAt":"2026-01-01","\#(card)":1}"#
        ]
        let r = try daemon.request(
            "POST", "/v1/labels", key: labels, json: #"{"labels":[\#(items.joined(separator: ","))]}"#,
            headers: ["Idempotency-Key": "k-2"])
        let text = String(decoding: r.body, as: UTF8.self)
        XCTAssertEqual(r.status, 200, text)
        let results = (0..<4).map { r.json?["results"]?[$0] }
        XCTAssertEqual(results.map { $0?["status"]?.stringValue }, ["accepted", "unknownInsight", "invalid", "invalid"])
        XCTAssertEqual(results.map { $0?["insightId"]?.stringValue }, [insightId, nil, nil, nil])
        XCTAssertEqual(results.map { $0?["field"]?.stringValue }, [nil, nil, "labels[2].outcome", "labels[3]"])
        for secret in secrets { XCTAssertFalse(text.contains(secret), text) }

        let log = String(decoding: try daemon.logText(), as: UTF8.self)
        for secret in secrets { XCTAssertFalse(log.contains(secret), "the log has \(secret)") }
    }

    /// A plain unknown name (a misspelt or wrongly nested member) is named with its path, at the
    /// top level, nested, in an array element and among the summary's features, so the caller
    /// can fix it from the answer; a name that is not plain falls back to the position. Neither
    /// reaches the log, even one that looks like an identifier.
    func testPlainUnknownMemberNamesAreNamedInTheAnswerButNeverLogged() throws {
        let daemon = try TestDaemon(.inProcess)
        let evaluate = try daemon.createCaller(roles: [.evaluate]).key
        let root = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]"#
        let kit = #"{"events":[{"t":0,"type":"sessionStart"}]}"#
        let cases: [(body: String, field: String, detail: String)] = [
            (
                root + #","interaction":{"interaction":\#(kit)}}"#, "interaction.interaction",
                "'interaction' is not a known field of interaction; the known fields are "
            ),
            (root + #","acct4111111111111111":1}"#, "acct4111111111111111", "'acct4111111111111111' is not a known field of the body; "),
            (
                root + #","subject":{"account":"a","newCounterParty":"x"}}"#, "subject.newCounterParty",
                "'newCounterParty' is not a known field of subject; the known fields are account, device, counterparty"
            ),
            (
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","version":1}]}"#, "insights[0].version",
                "'version' is not a known field of insights[0]; "
            ),
            (
                root + #","interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":1,"type":"tap","feild":"payee"}]}}"#,
                "interaction.events[1].feild", "'feild' is not a known field of interaction.events[1]; the known fields are t, type, field"
            ),
            (
                root + #","interaction":{"summary":{"sessionSeconds":10,"sesionSeconds":1}}}"#, "interaction.summary.sesionSeconds",
                "'sesionSeconds' is not a known feature; docs/features.md lists them"
            ),
            // Not plain: a separator, a leading digit or underscore, over 64 characters.
            (root + #","acct-4111111111111111":1}"#, "(body)", "has a member that is not a known field (member 3, counting from 1); "),
            (root + #","subject":{"4111111111111111":"x"}}"#, "subject", "(member 1, counting from 1)"),
            (root + #","_acct4111111111111111":1}"#, "(body)", "(member 3, counting from 1)"),
            (root + #","acct\#(String(repeating: "4", count: 61))":1}"#, "(body)", "(member 3, counting from 1)")
        ]
        for c in cases {
            let r = try daemon.request("POST", "/v1/evaluations", key: evaluate, json: c.body)
            let text = String(decoding: r.body, as: UTF8.self)
            XCTAssertEqual(r.status, 422, "\(c.body): \(text)")
            XCTAssertEqual(r.code, "contextInvalid", c.body)
            XCTAssertEqual(r.string("field"), c.field, "\(c.body): \(text)")
            XCTAssertTrue(r.string("detail")?.contains(c.detail) == true, "\(c.body): \(text)")
            if !c.detail.hasPrefix("'") {
                XCTAssertFalse(text.contains("4111111111111111"), "a name that is not plain was repeated: \(text)")
            }
        }
        let log = String(decoding: try daemon.logText(), as: UTF8.self)
        XCTAssertTrue(log.contains(#""status":422"#), "the refusals were logged")
        for name in ["interaction.interaction", "4111111111111111", "newCounterParty", "feild", "sesionSeconds", "is not a known"] {
            XCTAssertFalse(log.contains(name), "the log has \(name)")
        }
    }

    /// The daemon's own keyring job picks up a rotation within its interval, and so does every
    /// tenant's derived keyring.
    func testARotatedKeyFileIsPickedUpOnSchedule() throws {
        let daemon = try TestDaemon(.inProcess) { $0.complianceRefresh = 1 }
        let before = daemon.service.hashKeys.current.active.keyId
        let tenantBefore = daemon.service.hashKeys.current(tenant: "acme").active.keyId
        XCTAssertEqual(
            AdminCommand.main(
                arguments: [
                    "insightctl", "--state-dir", daemon.service.settings.stateDirectory,
                    "hash-keys", "rotate"
                ], environment: [:]), 0)
        let deadline = Date().addingTimeInterval(10)
        while daemon.service.hashKeys.current.active.keyId == before, Date() < deadline { usleep(50_000) }
        XCTAssertNotEqual(daemon.service.hashKeys.current.active.keyId, before, "the rotation was not picked up within 10 s")
        XCTAssertEqual(daemon.service.hashKeys.current(tenant: "acme").previous.first?.keyId, tenantBefore)
    }

    /// A key file that is not the store's (another instance's, a fresh one) would hash people
    /// differently from the stored data: start is refused, and so is a reload to it; a rotation
    /// that keeps the old key is accepted.
    func testAKeyringThatSharesNoKeyWithTheStoreIsRefused() throws {
        let daemon = try TestDaemon(.inProcess)
        let stateDir = daemon.service.settings.stateDirectory
        let keyFile = daemon.service.settings.resolvedHashKeyFile
        let original = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        let before = daemon.service.hashKeys.current.active.keyId

        // At run time: the swapped file is not used, and the error is logged.
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: keyFile))
        daemon.service.reloadHashKeysIfChanged()
        XCTAssertEqual(daemon.service.hashKeys.current.active.keyId, before)
        XCTAssertTrue(String(decoding: try daemon.logText(), as: UTF8.self).contains("shares no key with the store"), "no error logged")

        // At start: refused, naming the rule.
        XCTAssertThrowsError(try daemon.restart()) { error in
            XCTAssertTrue("\(error)".contains("shares no key with the store's"), "\(error)")
        }
        // The original key, rotated as an operator would, is accepted.
        try original.write(to: URL(fileURLWithPath: keyFile))
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDir, "hash-keys", "rotate"], environment: [:]), 0)
        try daemon.restart()
        XCTAssertEqual(daemon.service.hashKeys.current.previous.map(\.keyId), [before])
        let registered = try SQLiteConnection(path: daemon.service.settings.databasePath)
            .prepare("SELECT key_id FROM hash_keys").query { $0.text(0) ?? "" }
        XCTAssertEqual(Set(registered), Set(daemon.service.hashKeys.current.all.map(\.keyId)))
    }

    /// A hash key or signing key file that becomes readable by others while the daemon runs is
    /// refused at reload as it is at start: the keys in use stay, and the refusal is logged.
    func testAKeyFileMadeReadableIsRefusedAtReloadAsAtStart() throws {
        let daemon = try TestDaemon(.inProcess)
        let stateDir = daemon.service.settings.stateDirectory
        let keyFile = daemon.service.settings.resolvedHashKeyFile
        let before = daemon.service.hashKeys.current.active.keyId
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDir, "hash-keys", "rotate"], environment: [:]), 0)
        XCTAssertEqual(chmod(keyFile, 0o644), 0)
        daemon.service.reloadHashKeysIfChanged()
        XCTAssertEqual(daemon.service.hashKeys.current.active.keyId, before, "a readable key file was taken up")

        let signingDirectory = daemon.service.settings.resolvedSigningKeyDirectory
        let signingBefore = daemon.service.signingKeys.set.keys.map(\.keyId)
        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", stateDir, "signing-keys", "rotate", "--activate-after", "0"],
                environment: [:]), 0)
        for name in try FileManager.default.contentsOfDirectory(atPath: signingDirectory) {
            XCTAssertEqual(chmod(signingDirectory + "/" + name, 0o644), 0)
        }
        daemon.service.reloadSigningKeysIfChanged()
        XCTAssertEqual(daemon.service.signingKeys.set.keys.map(\.keyId), signingBefore, "a readable signing key was taken up")
        let log = String(decoding: try daemon.logText(), as: UTF8.self)
        XCTAssertTrue(log.contains("hash key file \(keyFile) is readable by other users"), log)
        XCTAssertTrue(log.contains("signing key file"), log)
        XCTAssertThrowsError(try daemon.restart(), "and at start") { XCTAssertTrue("\($0)".contains("readable by other users"), "\($0)") }
    }

    func testRotationKeepsOptOutsAndInvestigationsMatching() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock) { $0.authorizationCooldown = 0 }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(try put(daemon, key, "denied").json?["status"]?.stringValue, "denied")
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 403)
        let stateDir = daemon.service.settings.stateDirectory
        let before = daemon.service.hashKeys.current.active.keyId

        // Rotate as an operator would; the daemon notices the file change.
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDir, "hash-keys", "rotate"], environment: [:]), 0)
        daemon.service.reloadHashKeysIfChanged()
        let keyring = daemon.service.hashKeys.current
        XCTAssertNotEqual(keyring.active.keyId, before)
        XCTAssertEqual(keyring.previous.map(\.keyId), [before])

        // The opt-out made under the previous key still matches.
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 403)
        XCTAssertEqual(try query(daemon, key), "denied")
        // New evaluations are hashed under the new key.
        let other = try daemon.request(
            "POST", "/v1/evaluations", key: key,
            json: Self.evaluate.replacingOccurrences(of: "acct-77", with: "acct-90"))
        XCTAssertEqual(other.status, 200)
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        XCTAssertEqual(try db.scalarText("SELECT hash_key_id FROM evaluations ORDER BY created_at DESC LIMIT 1"), keyring.active.keyId)
        // The investigation hash is the one stored.
        let stored = try db.scalarText("SELECT hex(account_hash) FROM evaluations ORDER BY created_at DESC LIMIT 1")
        XCTAssertEqual(keyring.active.hash("acct-90", kind: .account).map { String(format: "%02X", $0) }.joined(), stored)
        // Re-authorizing folds the old-key record into the new key: insights are on again.
        XCTAssertEqual(try put(daemon, key, "authorized").status, 200)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 200)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM subject_authorizations"), "1")
        XCTAssertEqual(try db.scalarText("SELECT hash_key_id FROM subject_authorizations"), keyring.active.keyId)
    }

    /// A wall clock stepped a year ahead (a wrong NTP server, a bad RTC) makes every row look
    /// old; retention counts from the time the daemon measured instead, and purges nothing new.
    func testAWallClockSteppedFarAheadDoesNotPurgeRecentData() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock) { $0.retentionDays = 30 }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 200)
        func purge() throws -> Int {
            let done = expectation(description: "purged")
            let totals = ReportBox()
            daemon.service.purgeExpired { report in
                totals.report = report; done.fulfill()
            }
            wait(for: [done], timeout: 10)
            return try XCTUnwrap(totals.report).evaluations
        }
        clock.step(ms: 365 * 86_400_000)  // the wall clock alone: no time passed
        XCTAssertEqual(try purge(), 0, "a new evaluation was purged because the wall clock jumped a year")
        XCTAssertTrue(try String(contentsOf: daemon.logFile, encoding: .utf8).contains("retention counts from the measured time"))
        clock.advance(seconds: 31 * 86_400)  // now 31 days really pass
        XCTAssertEqual(try purge(), 1, "retention stopped working")
    }

    func testRetentionPurgesOldDataAndLabelsKeepWhatMetricsNeed() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock) {
            $0.retentionDays = 30
            $0.modelsDirectory = TestDaemon.committedModels
        }
        let key = try daemon.createCaller(roles: [.evaluate, .labels]).key
        let old = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate)
        let insightId = try XCTUnwrap(old.json?["insights"]?[0]?["insightId"]?.stringValue)
        let eventId = try XCTUnwrap(old.json?["eventId"]?.stringValue)
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/evaluations/\(eventId)/consumption", key: key,
                json: #"{"status":"notUsedNotNeeded"}"#
            ).status, 204)
        clock.advance(seconds: 20 * 86_400)
        let label = try daemon.request(
            "POST", "/v1/labels", key: key,
            json:
                #"{"labels":[{"insightId":"\#(insightId)","outcome":"confirmedLegitimate","discoveredAt":"\#(Timestamp.format(clock.now()).prefix(10))"}]}"#,
            headers: ["Idempotency-Key": "r-1"])
        XCTAssertEqual(label.json?["results"]?[0]?["status"]?.stringValue, "accepted")
        clock.advance(seconds: 11 * 86_400)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluate).status, 200)

        let done = expectation(description: "purged")
        let totals = ReportBox()
        daemon.service.purgeExpired { report in
            totals.report = report; done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(totals.report?.evaluations, 1)
        XCTAssertEqual(totals.report?.labels, 0)
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM evaluations"), "1")
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM insights"), "1")
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM consumption_reports"), "0")
        // The label outlives its evaluation with what model metrics need.
        XCTAssertEqual(
            try db.scalarText("SELECT category || ' ' || value || ' ' || outcome FROM labels"),
            "payment unknown confirmedLegitimate")

        // insightctl purge works on the store directly.
        daemon.service.stop()
        XCTAssertEqual(
            AdminCommand.main(
                arguments: [
                    "insightctl", "--state-dir", daemon.service.settings.stateDirectory,
                    "purge", "--older-than", "1"
                ], environment: [:]), 0)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM labels"), "1")  // received 11 days ago, evaluations now
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM evaluations"), "1")
    }
}
