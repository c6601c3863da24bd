import DaemonTesting
import Foundation
import InsightDomain
import InsightStorage
import JSON
import XCTest

/// Interventions on the wire (docs/api.md "Interventions", "Intervention catalogue"): the
/// admin's catalogue of its own tenant and environment, a consumption report's `intervention`
/// with each refusal's status, code and field, what is stored, and the report's idempotency.
final class InterventionAPITests: XCTestCase {
    static let romance =
        #"{"templateId":"w-romance","version":1,"kind":"scamWarning","scamTypes":["romance","investment"],"description":"Romance scam: never send money to someone you have not met"}"#

    private func evaluation(_ daemon: TestDaemon, key: String) throws -> String {
        let r = try daemon.request(
            "POST", "/v1/evaluations", key: key,
            json: #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        return r.json?["eventId"]?.stringValue ?? ""
    }

    private func report(_ daemon: TestDaemon, _ eventId: String, key: String, intervention: String) throws -> TestDaemon.Response {
        try daemon.request(
            "POST", "/v1/evaluations/\(eventId)/consumption", key: key,
            json: #"{"status":"usedIncreasedFriction","intervention":\#(intervention)}"#)
    }

    private static func now(offset: Int64 = 0) -> String { Timestamp.format(SystemClock().now() + offset) }

    func testTheCatalogueIsTheAdminsTenantsAndEnvironmentsAndEntriesNeverChange() throws {
        let daemon = try TestDaemon(.inProcess)
        let admin = try daemon.createCaller(roles: [.admin]).key
        let sandboxAdmin = try daemon.createCaller(roles: [.admin], environment: .sandbox).key
        let otherTenant = try daemon.createCaller(roles: [.admin], tenant: "acme").key
        var r = try daemon.request("POST", "/admin/v1/interventions", key: admin, json: Self.romance)
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.json?["scamTypes"]?.arrayValue?.compactMap(\.stringValue), ["investment", "romance"])
        XCTAssertEqual(r.json?["retiredAt"], .null)
        r = try daemon.request("POST", "/admin/v1/interventions", key: admin, json: Self.romance)
        XCTAssertEqual(r.status, 200, "the same entry again changes nothing")
        r = try daemon.request(
            "POST", "/admin/v1/interventions", key: admin, json: Self.romance.replacingOccurrences(of: "never send", with: "do not send"))
        XCTAssertEqual(r.status, 409)
        XCTAssertEqual(r.code, "interventionTemplateConflict")
        r = try daemon.request("GET", "/admin/v1/interventions", key: admin)
        XCTAssertEqual(r.json?["interventions"]?.arrayValue?.count, 1)
        for other in [sandboxAdmin, otherTenant] {
            r = try daemon.request("GET", "/admin/v1/interventions", key: other)
            XCTAssertEqual(r.json?["interventions"]?.arrayValue?.count, 0, "another environment's or tenant's catalogue")
            r = try daemon.request("POST", "/admin/v1/interventions/w-romance/versions/1/retire", key: other)
            XCTAssertEqual(r.status, 404)
            XCTAssertEqual(r.code, "interventionTemplateNotFound")
        }
        r = try daemon.request("POST", "/admin/v1/interventions/w-romance/versions/1/retire", key: admin)
        XCTAssertEqual(r.status, 200)
        XCTAssertNotNil(r.json?["retiredAt"]?.stringValue)
        r = try daemon.request("POST", "/admin/v1/interventions/w-romance/versions/01/retire", key: admin)
        XCTAssertEqual(r.code, "interventionTemplateNotFound", "a version is spelled one way")
        let evaluate = try daemon.createCaller(roles: [.evaluate]).key
        r = try daemon.request("GET", "/admin/v1/interventions", key: evaluate)
        XCTAssertEqual(r.status, 403)
    }

    func testEachBadCatalogueEntryIsRefusedNamingItsField() throws {
        let daemon = try TestDaemon(.inProcess)
        let admin = try daemon.createCaller(roles: [.admin]).key
        let cases: [(String, String)] = [
            (#"{"version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"x"}"#, "templateId"),
            (#"{"templateId":"-bad","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"x"}"#, "templateId"),
            (#"{"templateId":"w","version":0,"kind":"scamWarning","scamTypes":["romance"],"description":"x"}"#, "version"),
            (#"{"templateId":"w","version":1,"kind":"none","scamTypes":["romance"],"description":"x"}"#, "kind"),
            (#"{"templateId":"w","version":1,"kind":"scamWarning","scamTypes":[],"description":"x"}"#, "scamTypes"),
            (#"{"templateId":"w","version":1,"kind":"scamWarning","scamTypes":["lottery"],"description":"x"}"#, "scamTypes[0]"),
            (#"{"templateId":"w","version":1,"kind":"scamWarning","scamTypes":["romance","romance"],"description":"x"}"#, "scamTypes[1]"),
            (#"{"templateId":"w","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"a\nb"}"#, "description"),
            (
                #"{"templateId":"w","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"\#(String(repeating: "x", count: 201))"}"#,
                "description"
            ),
            (#"{"templateId":"w","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"x","who":1}"#, "who")
        ]
        for (body, field) in cases {
            let r = try daemon.request("POST", "/admin/v1/interventions", key: admin, json: body)
            XCTAssertEqual(r.status, 422, body)
            XCTAssertEqual(r.code, "contextInvalid", body)
            XCTAssertEqual(r.string("field"), field, body)
        }
    }

    func testAReportRecordsItsInterventionAgainstTheCatalogue() throws {
        let daemon = try TestDaemon(.inProcess)
        let admin = try daemon.createCaller(roles: [.admin]).key
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let acme = try daemon.createCaller(roles: [.admin], tenant: "acme").key
        XCTAssertEqual(try daemon.request("POST", "/admin/v1/interventions", key: admin, json: Self.romance).status, 201)
        let acmeEntry = Self.romance.replacingOccurrences(of: "w-romance", with: "w-acme")
        XCTAssertEqual(try daemon.request("POST", "/admin/v1/interventions", key: acme, json: acmeEntry).status, 201)
        let eventId = try evaluation(daemon, key: key)
        let shown = Self.now()
        let good = #"{"kind":"scamWarning","templateId":"w-romance","templateVersion":1,"shownAt":"\#(shown)","response":"abandoned"}"#
        let refusals: [(String, Int, String, String)] = [
            (
                #"{"kind":"scamWarning","templateId":"w-none","templateVersion":1,"shownAt":"\#(shown)","response":"abandoned"}"#, 422,
                "interventionTemplateUnknown", "intervention.templateId"
            ),
            (
                #"{"kind":"scamWarning","templateId":"w-acme","templateVersion":1,"shownAt":"\#(shown)","response":"abandoned"}"#, 422,
                "interventionTemplateUnknown", "intervention.templateId"
            ),
            (
                #"{"kind":"questionnaire","templateId":"w-romance","templateVersion":1,"shownAt":"\#(shown)","response":"abandoned"}"#,
                422, "interventionKindMismatch", "intervention.kind"
            ),
            (
                #"{"kind":"scamWarning","templateId":"w-romance","templateVersion":1,"shownAt":"2001-01-01T00:00:00Z","response":"abandoned"}"#,
                422, "interventionTimeInvalid", "intervention.shownAt"
            ),
            (
                #"{"kind":"hold","shownAt":"\#(shown)","response":"released","hold":{"startedAt":"\#(shown)","endedAt":"2001-01-01T00:00:00.000Z","toldAt":"\#(shown)"}}"#,
                422, "interventionTimeInvalid", "intervention.hold.endedAt"
            ),
            (#"{"kind":"scamWarning","shownAt":"\#(shown)","response":"abandoned"}"#, 422, "contextInvalid", "intervention.templateId"),
            (#"{"kind":"hold","shownAt":"\#(shown)","response":"released"}"#, 422, "contextInvalid", "intervention.hold"),
            (#"{"kind":"none","response":"proceeded"}"#, 422, "contextInvalid", "intervention.response"),
            (#"{"kind":"callBack","shownAt":"yesterday","response":"calledBack"}"#, 422, "contextInvalid", "intervention.shownAt"),
            (#"{"kind":"callBack","shownAt":"\#(shown)","response":"fine"}"#, 422, "contextInvalid", "intervention.response"),
            (#"{"kind":"callBack","shownAt":"\#(shown)"}"#, 422, "contextInvalid", "intervention.response"),
            (
                #"{"kind":"callBack","shownAt":"\#(shown)","response":"calledBack","templateVersion":1}"#, 422, "contextInvalid",
                "intervention.templateVersion"
            )
        ]
        for (intervention, status, code, field) in refusals {
            let r = try report(daemon, eventId, key: key, intervention: intervention)
            XCTAssertEqual(r.status, status, intervention)
            XCTAssertEqual(r.code, code, intervention)
            XCTAssertEqual(r.string("field"), field, intervention)
        }
        var r = try report(daemon, eventId, key: key, intervention: good)
        XCTAssertEqual(r.status, 204, String(decoding: r.body, as: UTF8.self))
        r = try report(daemon, eventId, key: key, intervention: good)
        XCTAssertEqual(r.status, 204, "the same report again")
        r = try report(daemon, eventId, key: key, intervention: good.replacingOccurrences(of: "abandoned", with: "proceeded"))
        XCTAssertEqual(r.status, 409)
        XCTAssertEqual(r.code, "consumptionConflict")
        r = try daemon.request("POST", "/v1/evaluations/\(eventId)/consumption", key: key, json: #"{"status":"usedIncreasedFriction"}"#)
        XCTAssertEqual(r.code, "consumptionConflict", "the same status without the intervention is another report")
        // Stored with the report: closed codes, the template's id and version, the time.
        let db = try Database.open(path: daemon.service.settings.databasePath)
        let rows = try db.prepare(
            "SELECT intervention, template_id, template_version, shown_at, response, hold_started_at FROM consumption_reports"
        )
        .query { "\($0.text(0) ?? "-") \($0.text(1) ?? "-") \($0.int(2)) \($0.int64(3)) \($0.text(4) ?? "-") \($0.isNull(5))" }
        XCTAssertEqual(rows, ["scamWarning w-romance 1 \(Timestamp.parse(shown) ?? 0) abandoned true"])
        // The decisions report counts it by intervention and response (no model: the policy proceeds).
        r = try daemon.request("GET", "/admin/v1/decisions", key: admin)
        XCTAssertEqual(r.status, 200)
        let proceed = r.json?["callers"]?[0]?["actions"]?["proceed"]
        XCTAssertEqual(
            proceed?["interventions"], try JSONParser.parse(Array(#"{"scamWarning":{"reports":1,"responses":{"abandoned":1}}}"#.utf8)))
        XCTAssertEqual(r.json?["callers"]?[0]?["actions"]?["block"]?["interventions"], .object([:]))
    }

    func testAHoldRecordsItsStartEndAndTelling() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let eventId = try evaluation(daemon, key: key)
        let (start, told, end) = (Self.now(), Self.now(offset: 1_000), Self.now(offset: 2_000))
        let hold =
            #"{"kind":"hold","shownAt":"\#(start)","response":"released","hold":{"startedAt":"\#(start)","endedAt":"\#(end)","toldAt":"\#(told)"}}"#
        XCTAssertEqual(try report(daemon, eventId, key: key, intervention: hold).status, 204)
        let db = try Database.open(path: daemon.service.settings.databasePath)
        let rows = try db.prepare("SELECT hold_started_at, hold_ended_at, hold_told_at FROM consumption_reports")
            .query { [$0.int64(0), $0.int64(1), $0.int64(2)] }
        XCTAssertEqual(rows, [[start, end, told].map { Timestamp.parse($0) ?? 0 }])
    }
}
