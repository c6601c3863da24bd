import DaemonTesting
import Foundation
import InsightApp
import InsightControl
import InsightDomain
import InsightTesting
import JSON
import XCTest

/// The API contract (docs/api.md, openapi/openapi.json) against a live daemon on port 0.
final class APITests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""
    var callerId = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.inProcess)
        (callerId, key) = try daemon.createCaller(roles: [.evaluate, .labels])
    }

    override func tearDown() { daemon = nil }

    static let insight = RequestBodies.insight
    static func body(_ extra: String = "", insights: String = insight) -> String {
        RequestBodies.evaluation(extra, insights: insights)
    }

    func evaluate(_ json: String, key: String? = nil) throws -> TestDaemon.Response {
        try daemon.request("POST", "/v1/evaluations", key: key ?? self.key, json: json)
    }

    /// Answers that say who a caller or a person is are never stored by a browser or proxy
    /// (`Cache-Control: no-store`), refusals included; the evaluation path is left alone.
    func testAdminAndSubjectAnswersAreNotStored() throws {
        let admin = try daemon.createCaller(roles: [.admin])
        let subject = #"{"subject":{"account":"acct-cache"}}"#
        let requests: [(String, String, String, String?)] = [
            ("GET", "/admin/v1/callers", admin.key, nil), ("GET", "/admin/v1/callers/\(callerId)", admin.key, nil),
            ("GET", "/admin/v1/callers/\(callerId)/rate-limit", admin.key, nil), ("GET", "/admin/v1/rate-limits", admin.key, nil),
            ("GET", "/admin/v1/callers/\(callerId)/keys", admin.key, nil), ("GET", "/admin/v1/decisions", admin.key, nil),
            ("GET", "/admin/v1/health", admin.key, nil), ("GET", "/admin/v1/callers/nobody", admin.key, nil),
            ("GET", "/admin/v1/callers", key, nil),
            ("POST", "/v1/subjects/transparency", key, subject), ("POST", "/v1/authorization/query", key, subject),
            ("POST", "/v1/subjects/erasure", admin.key, subject), ("POST", "/v1/subjects/transparency", key, "{")
        ]
        for (method, path, key, body) in requests {
            let r = try daemon.request(method, path, key: key, json: body)
            XCTAssertEqual(r.headers["cache-control"], "no-store", "\(method) \(path) answered \(r.status)")
        }
        XCTAssertNil(try evaluate(Self.body()).headers["cache-control"])
    }

    // MARK: Evaluate

    func testEvaluateAnswersTheContractShape() throws {
        let r = try evaluate(
            Self.body(
                #","requestId":"txn-2026-000123","subject":{"account":"a","device":"d","counterparty":"c"},"transaction":{"newCounterparty":true,"amountBand":"high"}"#,
                insights: Self.insight + "," + #"{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"1.0"}"#))
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.headers["content-type"], "application/json")
        let json = try XCTUnwrap(r.json)
        XCTAssertEqual(json["requestId"]?.stringValue, "txn-2026-000123")
        XCTAssertEqual(json["environment"]?.stringValue, "production")
        XCTAssertNotNil(json["eventId"]?.stringValue?.range(of: "^[0-9a-f-]{36}$", options: .regularExpression))
        let server = try XCTUnwrap(json["serverTimestamp"]?.stringValue)
        let due = try XCTUnwrap(json["reportConsumptionBy"]?.stringValue)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let gap = try XCTUnwrap(formatter.date(from: due)).timeIntervalSince(try XCTUnwrap(formatter.date(from: server)))
        XCTAssertEqual(gap, 900, accuracy: 0.001)
        for i in 0..<2 {
            let insight = try XCTUnwrap(json["insights"]?[i])
            XCTAssertEqual(insight["type"]?.stringValue, "isLikelyBeingCoached")
            XCTAssertEqual(insight["schemaVersion"]?.numberValue, 1)
            XCTAssertNotNil(insight["insightId"]?.stringValue)
            // No model is loaded here: an insight-level error, never an invented value.
            XCTAssertEqual(insight["outcome"]?["error"]?["code"]?.stringValue, "insightUnavailable")
            XCTAssertNil(insight["outcome"]?["value"])
        }
    }

    func testInsightLevelErrorsDoNotFailTheOthers() throws {
        let r = try evaluate(
            Self.body(
                insights: #"{"type":"isLikelyBeingPhished","schemaVersion":1},{"type":"isLikelyBeingCoached","schemaVersion":2},"#
                    + Self.insight))
        XCTAssertEqual(r.status, 200)
        let insights = try XCTUnwrap(r.json?["insights"])
        XCTAssertEqual(insights[0]?["outcome"]?["error"]?["code"]?.stringValue, "insightUnavailable")
        XCTAssertEqual(insights[0]?["type"]?.stringValue, "isLikelyBeingPhished")
        XCTAssertEqual(insights[1]?["outcome"]?["error"]?["code"]?.stringValue, "insightVersionIncompatible")
        XCTAssertNotNil(insights[2]?["outcome"])
    }

    func testEvaluateValidationNamesTheField() throws {
        let cases: [(String, Int, String)] = [
            (#"{"insights":[\#(Self.insight)]}"#, 422, "operationCategory"),
            (#"{"operationCategory":"wire","insights":[\#(Self.insight)]}"#, 422, "operationCategory"),
            (#"{"operationCategory":"payment"}"#, 422, "insights"),
            (#"{"operationCategory":"payment","insights":[]}"#, 422, "insights"),
            (Self.body(insights: Array(repeating: Self.insight, count: 5).joined(separator: ",")), 422, "insights"),
            (Self.body(insights: #"{"schemaVersion":1}"#), 422, "insights[0].type"),
            (Self.body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":"1"}"#), 422, "insights[0].schemaVersion"),
            (Self.body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":1.5}"#), 422, "insights[0].schemaVersion"),
            (Self.body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":1,"extra":1}"#), 422, "insights[0].extra"),
            (Self.body(#","color":"blue""#), 422, "color"),
            (Self.body(#","requestId":"\#(String(repeating: "x", count: 129))""#), 422, "requestId"),
            (Self.body(#","requestId":"a\u0007b""#), 422, "requestId"),
            (Self.body(#","requestId":"""#), 422, "requestId"),
            (Self.body(#","subject":{"account":42}"#), 422, "subject.account"),
            (Self.body(#","subject":{"email":"x"}"#), 422, "subject.email"),
            (Self.body(#","subject":"acct""#), 422, "subject"),
            (Self.body(#","transaction":{"amountBand":"huge"}"#), 422, "transaction.amountBand"),
            (Self.body(#","interaction":{"events":[{"t":-1,"type":"sessionStart"}]}"#), 422, "interaction.events[0].t"),
            (Self.body(#","interaction":{"events":[{"t":5,"type":"sessionStart"},{"t":4,"type":"tap"}]}"#), 422, "interaction.events[1].t"),
            (Self.body(#","interaction":{"events":[{"t":0,"type":"typed character"}]}"#), 422, "interaction.events[0].type"),
            (Self.body(#","interaction":{"events":[{"t":0,"type":"tap","field":"iban"}]}"#), 422, "interaction.events[0].field"),
            (Self.body(#","interaction":{"events":[{"t":0,"type":"tap","chars":"1234"}]}"#), 422, "interaction.events[0].chars"),
            (Self.body(#","interaction":{"events":[],"summary":{}}"#), 422, "interaction"),
            (Self.body(#","interaction":{"device":{"activeCall":"yes"}}"#), 422, "interaction.device.activeCall"),
            (Self.body(#","interaction":{"summary":{"sessionLength":"long"}}"#), 422, "interaction.summary.sessionLength"),
            ("[1,2]", 400, "(body)"),
            ("{\"operationCategory\":", 400, "(body)"),
            ("", 400, "(body)")
        ]
        for (json, status, field) in cases {
            let r = try evaluate(json)
            XCTAssertEqual(r.status, status, "\(json): \(String(decoding: r.body, as: UTF8.self))")
            XCTAssertEqual(r.headers["content-type"], "application/problem+json", json)
            XCTAssertEqual(r.code, "contextInvalid", json)
            XCTAssertEqual(r.string("field"), field, json)
            XCTAssertEqual(r.object?["status"]?.numberValue, Double(status), json)
            XCTAssertNotNil(r.string("type"))
            XCTAssertNotNil(r.string("title"))
        }
    }

    func testPersonalDataInRequestIdIsRefusedWithoutEchoingIt() throws {
        for (value, kind) in [
            ("jane.doe@example.com", "e-mail"), ("+44 20 7946 0958", "phone"),
            ("card-4111 1111 1111 1111", "card"), ("GB82 WEST 1234 5698 7654 32", "IBAN")
        ] {
            let r = try evaluate(Self.body(#","requestId":"\#(value)""#))
            XCTAssertEqual(r.status, 422, value)
            XCTAssertEqual(r.string("field"), "requestId", value)
            XCTAssertTrue(r.string("detail")?.contains(kind) ?? false, "\(value): \(r.string("detail") ?? "")")
            XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains(value), "the value was echoed")
        }
        XCTAssertEqual(try evaluate(Self.body(#","requestId":"txn-2026-000123""#)).status, 200)
        let log = String(decoding: try daemon.logText(), as: UTF8.self)
        XCTAssertFalse(log.contains("jane.doe"))
    }

    func testTooManyEventsIsRefused() throws {
        let events = (0...5000).map { #"{"t":\#($0),"type":"tap"}"# }.joined(separator: ",")
        let r = try evaluate(Self.body(#","interaction":{"events":[\#(events)]}"#))
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.string("field"), "interaction.events")
    }

    func testMediaTypeAndSize() throws {
        var r = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(), contentType: nil)
        XCTAssertEqual(r.status, 415)
        XCTAssertEqual(r.code, "unsupportedMediaType")
        r = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(), contentType: "text/plain")
        XCTAssertEqual(r.status, 415)
        r = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(), contentType: "application/json; charset=latin1")
        XCTAssertEqual(r.status, 415)
        r = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body(), contentType: "application/json; charset=utf-8")
        XCTAssertEqual(r.status, 200)
        // Refused by the server's parser, before the handler: over the socket.
        let big = String(repeating: " ", count: (1 << 20) + 1)
        r = try daemon.request("POST", "/v1/evaluations", key: key, json: big, over: .live)
        XCTAssertEqual(r.status, 413)
        XCTAssertEqual(r.code, "payloadTooLarge")
        XCTAssertEqual(r.headers["content-type"], "application/problem+json")
    }

    // MARK: Routing and authentication

    func testUnknownPathAndWrongMethod() throws {
        var r = try daemon.request("GET", "/v2/evaluations", key: key)
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.code, "notFound")
        r = try daemon.request("GET", "/v1/evaluations", key: key)
        XCTAssertEqual(r.status, 405)
        XCTAssertEqual(r.code, "methodNotAllowed")
        XCTAssertEqual(r.headers["allow"], "POST")
        r = try daemon.request("DELETE", "/v1/insights", key: key)
        XCTAssertEqual(r.headers["allow"], "GET, HEAD")
    }

    func testAuthentication() throws {
        var r = try daemon.request("POST", "/v1/evaluations", json: Self.body())
        XCTAssertEqual(r.status, 401)
        XCTAssertEqual(r.code, "unauthorized")
        XCTAssertEqual(r.headers["www-authenticate"], #"Bearer realm="insightd""#)
        r = try daemon.request("POST", "/v1/evaluations", key: "not-a-key", json: Self.body())
        XCTAssertEqual(r.status, 401)
        // Right shape, wrong secret.
        let forged = String(key.prefix(20)) + String(repeating: "A", count: 43)
        r = try daemon.request("POST", "/v1/evaluations", key: forged, json: Self.body())
        XCTAssertEqual(r.status, 401)
        r = try daemon.request("POST", "/v1/evaluations", json: Self.body(), headers: ["Authorization": "Basic dXNlcjpwYXNz"])
        XCTAssertEqual(r.status, 401)

        let labelsOnly = try daemon.createCaller(roles: [.labels])
        r = try evaluate(Self.body(), key: labelsOnly.key)
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(r.code, "forbidden")
        let evaluateOnly = try daemon.createCaller(roles: [.evaluate])
        r = try daemon.request("POST", "/v1/labels", key: evaluateOnly.key, json: #"{"labels":[]}"#, headers: ["Idempotency-Key": "k"])
        XCTAssertEqual(r.status, 403)
    }

    func testRevokedKeyIsRefusedWithoutRestart() throws {
        XCTAssertEqual(try evaluate(Self.body()).status, 200)
        let db = try InsightStorageAccess.open(daemon)
        try db.revoke(key)
        XCTAssertEqual(try evaluate(Self.body()).status, 401)
    }

    /// With a credential cache, a key revoked after the wall clock stepped back is refused once
    /// the cache time has passed, not once the clock has caught up with the step.
    func testARevocationIsNotDelayedByAWallClockSteppedBack() throws {
        let clock = ManualClock()
        let cached = try TestDaemon(.inProcess, clock: clock) { $0.credentialCacheSeconds = 30 }
        let (_, key) = try cached.createCaller(roles: [.evaluate])
        XCTAssertEqual(try cached.request("POST", "/v1/evaluations", key: key, json: Self.body()).status, 200)  // cached now
        clock.advance(ms: -3_600_000)  // the clock steps back an hour
        try InsightStorageAccess.open(cached).revoke(key)
        clock.advance(seconds: 31)  // the cache time, but 59 minutes short of the step
        XCTAssertEqual(try cached.request("POST", "/v1/evaluations", key: key, json: Self.body()).status, 401)
    }

    // MARK: Consumption

    func evaluation(key: String? = nil) throws -> (eventId: String, insightId: String) {
        let r = try evaluate(Self.body(), key: key)
        XCTAssertEqual(r.status, 200)
        return (try XCTUnwrap(r.json?["eventId"]?.stringValue), try XCTUnwrap(r.json?["insights"]?[0]?["insightId"]?.stringValue))
    }

    func consume(_ eventId: String, _ json: String, key: String? = nil) throws -> TestDaemon.Response {
        try daemon.request("POST", "/v1/evaluations/\(eventId)/consumption", key: key ?? self.key, json: json)
    }

    func testConsumptionLifecycle() throws {
        let (eventId, insightId) = try evaluation()
        var r = try consume(eventId, #"{"status":"usedIncreasedFriction","insightIdsUsed":["nope"]}"#)
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.string("field"), "insightIdsUsed[0]")
        r = try consume(eventId, #"{"status":"usedMoreFriction"}"#)
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.string("field"), "status")
        r = try consume(eventId, #"{"status":"usedIncreasedFriction","insightIdsUsed":["\#(insightId)"]}"#)
        XCTAssertEqual(r.status, 204)
        XCTAssertTrue(r.body.isEmpty)
        r = try consume(eventId, #"{"status":"usedIncreasedFriction","insightIdsUsed":["\#(insightId)"]}"#)
        XCTAssertEqual(r.status, 204)
        r = try consume(eventId, #"{"status":"notUsedNotNeeded"}"#)
        XCTAssertEqual(r.status, 409)
        XCTAssertEqual(r.code, "consumptionConflict")
        r = try consume("00000000-0000-4000-8000-000000000000", #"{"status":"notUsedNotNeeded"}"#)
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.code, "evaluationNotFound")
    }

    /// An id within the document's 64 characters is well-formed even when its UTF-8 is longer
    /// (found by schemathesis: 58 four-byte characters were refused as malformed).
    func testInsightIdsAreMeasuredInCharacters() throws {
        let wide = String(repeating: "\u{1D4E3}", count: 58)
        var r = try consume("00000000-0000-4000-8000-000000000000", #"{"status":"notUsedNotNeeded","insightIdsUsed":["\#(wide)"]}"#)
        XCTAssertEqual(r.status, 404, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.code, "evaluationNotFound")
        r = try consume(
            "00000000-0000-4000-8000-000000000000",
            #"{"status":"notUsedNotNeeded","insightIdsUsed":["\#(String(repeating: "x", count: 65))"]}"#)
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.string("field"), "insightIdsUsed[0]")
    }

    func testAnotherCallersOrEnvironmentsEvaluationIsNotFound() throws {
        let (eventId, _) = try evaluation()
        let other = try daemon.createCaller(roles: [.evaluate])
        XCTAssertEqual(try consume(eventId, #"{"status":"notUsedNotNeeded"}"#, key: other.key).status, 404)
        let sandbox = try daemon.createCaller(roles: [.evaluate, .labels], environment: .sandbox)
        XCTAssertEqual(try consume(eventId, #"{"status":"notUsedNotNeeded"}"#, key: sandbox.key).status, 404)
        let sandboxEvaluation = try evaluate(Self.body(), key: sandbox.key)
        XCTAssertEqual(sandboxEvaluation.json?["environment"]?.stringValue, "sandbox")
        // A sandbox labeller cannot label production insights.
        let (_, insightId) = try evaluation()
        let r = try daemon.request(
            "POST", "/v1/labels", key: sandbox.key,
            json: #"{"labels":[{"insightId":"\#(insightId)","outcome":"confirmedLegitimate","discoveredAt":"2026-11-01"}]}"#,
            headers: ["Idempotency-Key": "sb-1"])
        XCTAssertEqual(r.json?["results"]?[0]?["status"]?.stringValue, "unknownInsight")
    }

    // MARK: Labels

    func labels(_ json: String, idempotencyKey: String?) throws -> TestDaemon.Response {
        try daemon.request(
            "POST", "/v1/labels", key: key, json: json,
            headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
    }

    func testLabelsPerItemResultsAndIdempotency() throws {
        let (_, insightId) = try evaluation()
        let body = #"""
            {"labels":[
              {"insightId":"\#(insightId)","outcome":"confirmedFraud","fraudType":"authorityImpersonation","discoveredAt":"2026-11-15"},
              {"insightId":"\#(insightId)","outcome":"confirmedFraud","fraudType":"authorityImpersonation","discoveredAt":"2026-11-15"},
              {"insightId":"\#(insightId)","outcome":"confirmedLegitimate","discoveredAt":"2026-11-16"},
              {"insightId":"5d1e0000-0000-4000-8000-000000000000","outcome":"confirmedFraud","fraudType":"other","discoveredAt":"2026-11-15"},
              {"insightId":"\#(insightId)","outcome":"confirmedFraud","fraudType":"other","discoveredAt":"2026-11-15","note":"free text"},
              {"insightId":"\#(insightId)","outcome":"confirmedFraud","discoveredAt":"2026-11-15"},
              {"insightId":"\#(insightId)","outcome":"confirmedFraud","fraudType":"other","discoveredAt":"2026-02-30"},
              {"insightId":"\#(insightId)","outcome":"confirmedFraud","fraudType":"other","discoveredAt":"2999-01-01"},
              "not an object"
            ]}
            """#
        var r = try labels(body, idempotencyKey: "batch-1")
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let statuses = (0..<9).map { r.json?["results"]?[$0]?["status"]?.stringValue }
        XCTAssertEqual(
            statuses, ["accepted", "duplicate", "conflict", "unknownInsight", "invalid", "invalid", "invalid", "invalid", "invalid"])
        XCTAssertEqual(r.json?["results"]?[4]?["field"]?.stringValue, "labels[4].note")
        XCTAssertEqual(r.json?["results"]?[5]?["field"]?.stringValue, "labels[5].fraudType")
        XCTAssertEqual(r.json?["results"]?[6]?["field"]?.stringValue, "labels[6].discoveredAt")
        XCTAssertEqual(r.json?["summary"]?["invalid"]?.numberValue, 5)
        XCTAssertNil(r.headers["idempotent-replayed"])
        let first = r.body

        r = try labels(body, idempotencyKey: "batch-1")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.body, first)
        XCTAssertEqual(r.headers["idempotent-replayed"], "true")

        r = try labels(
            #"{"labels":[{"insightId":"\#(insightId)","outcome":"confirmedLegitimate","discoveredAt":"2026-11-16"}]}"#,
            idempotencyKey: "batch-1")
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.code, "idempotencyKeyReused")
    }

    func testLabelRequestErrors() throws {
        let one = #"{"labels":[{"insightId":"x","outcome":"confirmedLegitimate","discoveredAt":"2026-11-16"}]}"#
        var r = try labels(one, idempotencyKey: nil)
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.string("field"), "Idempotency-Key")
        r = try labels(one, idempotencyKey: String(repeating: "k", count: 256))
        XCTAssertEqual(r.status, 400)
        r = try labels(#"{"labels":[]}"#, idempotencyKey: "e1")
        XCTAssertEqual(r.status, 422)
        let many =
            "{\"labels\":["
            + Array(repeating: #"{"insightId":"x","outcome":"confirmedLegitimate","discoveredAt":"2026-11-16"}"#, count: 1001).joined(
                separator: ",") + "]}"
        r = try labels(many, idempotencyKey: "e2")
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.string("field"), "labels")
        r = try labels(#"{"labels":[],"comment":"hi"}"#, idempotencyKey: "e3")
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.string("field"), "comment")
        XCTAssertEqual(r.string("detail"), "'comment' is not a known field of the body; the known fields are labels")
    }

    func testLabelsArriveLongAfterTheEvaluation() throws {
        let (_, insightId) = try evaluation()
        // The label's discovery date may be months after the evaluation; only its insight matters.
        let r = try labels(
            #"{"labels":[{"insightId":"\#(insightId)","outcome":"confirmedFraud","fraudType":"romanceScam","discoveredAt":"\#(Timestamp.format(SystemClock().now()).prefix(10))"}]}"#,
            idempotencyKey: "late-1")
        XCTAssertEqual(r.json?["results"]?[0]?["status"]?.stringValue, "accepted")
    }

    // MARK: Catalog and health

    func testInsightsCatalogAndHealth() throws {
        var r = try daemon.request("GET", "/v1/insights", key: key)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.json?["insights"]?[0]?["type"]?.stringValue, "isLikelyBeingCoached")
        XCTAssertEqual(r.json?["insights"]?[0]?["schemaVersions"]?[0]?.numberValue, 1)
        XCTAssertEqual(try daemon.request("GET", "/v1/insights").status, 401)
        r = try daemon.request("GET", "/livez")
        XCTAssertEqual(r.status, 200)
        r = try daemon.request("GET", "/readyz")
        XCTAssertEqual(r.status, 200)
        daemon.service.readiness.set(false)
        r = try daemon.request("GET", "/readyz")
        XCTAssertEqual(r.status, 503)
        XCTAssertEqual(r.headers["content-type"], "application/problem+json")
    }

    // MARK: Privacy

    func testNoRawIdentifierReachesTheStoreOrTheLog() throws {
        let account = "acct-PRIVACY-91827", device = "dev-PRIVACY-55", payee = "payee-PRIVACY-DE89"
        let r = try evaluate(
            Self.body(
                #","requestId":"req-PRIVACY-7","subject":{"account":"\#(account)","device":"\#(device)","counterparty":"\#(payee)"},"interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":123457,"type":"submit"}]}"#
            ))
        XCTAssertEqual(r.status, 200)
        _ = try evaluate(Self.body(#","subject":{"account":"\#(account)"}"#).replacingOccurrences(of: "payment", with: "wire"))
        daemon.service.stop()
        let bytes = try daemon.allStoredBytes()
        XCTAssertFalse(bytes.isEmpty)
        for needle in [account, device, payee, "req-PRIVACY-7", "123457", key] {
            XCTAssertNil(bytes.range(of: Data(needle.utf8)), "\(needle) found in the state directory or log")
        }
    }
}

/// Store access for tests that change state behind the daemon's back, as insightctl would.
struct InsightStorageAccess {
    let path: String
    static func open(_ daemon: TestDaemon) throws -> InsightStorageAccess {
        InsightStorageAccess(path: daemon.service.settings.databasePath)
    }
    func revoke(_ token: String) throws {
        let code = AdminCommand.main(
            arguments: [
                "insightctl", "--state-dir", (path as NSString).deletingLastPathComponent,
                "keys", "revoke", token
            ], environment: [:])
        XCTAssertEqual(code, 0)
    }
}
