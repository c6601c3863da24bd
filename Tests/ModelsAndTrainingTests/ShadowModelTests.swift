import DaemonTesting
import Foundation
import InsightApp
@testable import InsightControl
import InsightDomain
import InsightTesting
import JSON
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Shadow model versions and drift through a real daemon (docs/operations.md "Shadow versions"):
/// with `INSIGHTD_MODEL_SHADOW=1.0` beside the current 2.0, every coaching evaluation is scored by
/// 1.0 too, stored, reported as `"role": "shadow"` with the labels of the served insight, and never
/// answered, shown or labelled itself; each version's drift (PSI) is in the report and the metrics.
final class ShadowModelTests: XCTestCase {
    static let noCall = #"{"activeCall":false,"callStartedBeforeSession":false,"screenSharing":false,"remoteAccessApp":false}"#
    static let onCall = #"{"activeCall":true,"callStartedBeforeSession":true,"screenSharing":false,"remoteAccessApp":false}"#

    /// The committed models, copied, with references made so that every score falls in a known
    /// bin: 2.0 in bin 0 of (0.3, 0.7), 1.0 in bin 1 of (0.6, 0.4).
    func models() throws -> String {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("insightd-shadow-models-\(UUID().uuidString)")
        try FileManager.default.copyItem(atPath: TestDaemon.committedModels, toPath: copy.path)
        addTeardownBlock { try? FileManager.default.removeItem(at: copy) }
        for (version, edge, shares) in [("2.0", 1_000.0, [0.3, 0.7]), ("1.0", -1_000.0, [0.6, 0.4])] {
            let path = copy.appendingPathComponent(version).appendingPathComponent("manifest.json")
            var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
            let bins = Dictionary(
                uniqueKeysWithValues: OperationCategory.allCases.map { ($0.rawValue, ["edges": [edge], "shares": shares]) })
            manifest["scoreReference"] = ["scale": "raw", "bins": bins]
            try JSONSerialization.data(withJSONObject: manifest).write(to: path)
        }
        return copy.path
    }

    /// PSI as docs/operations.md defines it, computed here on its own.
    static func psi(_ actual: [Double], _ expected: [Double]) -> Double {
        zip(actual, expected).reduce(0) { sum, pair in
            let a = max(pair.0, 0.0001), e = max(pair.1, 0.0001)
            return sum + (a - e) * Foundation.log(a / e)
        }
    }

    func testShadowIsScoredStoredReportedAndNeverAnswered() throws {
        let clock = ManualClock(Timestamp.parseDate("2027-01-10")! + 43_200_000)
        let daemon = try TestDaemon(.inProcess, clock: clock) {
            $0.modelsDirectory = try! self.models()
            $0.shadowModels = ["1.0"]
        }
        let caller = try daemon.createCaller(roles: [.evaluate, .labels])
        let sandbox = try daemon.createCaller(roles: [.evaluate], environment: .sandbox)
        let admin = try daemon.createCaller(roles: [.admin])
        func body(_ n: Int, coached: Bool, category: OperationCategory, version: String? = nil) -> String {
            let named = version.map { #","modelVersion":"\#($0)""# } ?? ""
            return
                #"{"operationCategory":"\#(category.rawValue)","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1\#(named)}],"subject":{"account":"acct-\#(n)"},"interaction":{"events":[\#(coached ? InteractionEvents.coached : InteractionEvents.genuine)],"device":\#(coached ? Self.onCall : Self.noCall)}}"#
        }

        // What 1.0 answers for each kind of session, asked of it directly (in the sandbox, whose
        // figures are apart).
        var oneDotZero: [String: InsightValue] = [:]
        for coached in [false, true] {
            for category in [OperationCategory.payment, .account] {
                let r = try daemon.request(
                    "POST", "/v1/evaluations", key: sandbox.key,
                    json: body(0, coached: coached, category: category, version: "1.0"))
                XCTAssertEqual(r.status, 200)
                oneDotZero["\(coached) \(category)"] = r.json?["insights"]?[0]?["outcome"]?["value"]?.stringValue
                    .flatMap(InsightValue.init(rawValue:))
            }
        }

        // 520 payment and 20 account evaluations asking only the current version.
        struct Sent { var eventId: String, insightId: String, coached: Bool, category: OperationCategory, value: InsightValue }
        var sent: [Sent] = []
        for n in 0..<540 {
            let coached = n % 3 == 0, category: OperationCategory = n < 520 ? .payment : .account
            let r = try daemon.request("POST", "/v1/evaluations", key: caller.key, json: body(n, coached: coached, category: category))
            XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
            let insights = try XCTUnwrap(r.json?["insights"]?.arrayValue)
            XCTAssertEqual(insights.count, 1, "only what was asked is answered")
            XCTAssertEqual(insights[0]["modelVersion"]?.stringValue, "2.0")
            XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains(#""1.0""#), "no shadow in the (signed) answer")
            let eventId = try XCTUnwrap(r.string("eventId"))
            sent.append(
                Sent(
                    eventId: eventId, insightId: try XCTUnwrap(insights[0]["insightId"]?.stringValue), coached: coached,
                    category: category,
                    value: try XCTUnwrap(insights[0]["outcome"]?["value"]?.stringValue.flatMap(InsightValue.init(rawValue:)))))
        }
        // The shadow answer's id is made from the event id at the first shadow position (4).
        let shadowId = String(sent[0].eventId.dropLast()) + "5"

        // Neither consumption nor labels know a shadow answer's id.
        var r = try daemon.request(
            "POST", "/v1/evaluations/\(sent[0].eventId)/consumption", key: caller.key,
            json: #"{"status":"usedIncreasedFriction","insightIdsUsed":["\#(shadowId)"]}"#)
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.string("field"), "insightIdsUsed[0]")
        r = try daemon.request(
            "POST", "/v1/labels", key: caller.key,
            json: #"{"labels":[{"insightId":"\#(shadowId)","outcome":"confirmedLegitimate","discoveredAt":"2027-01-10"}]}"#,
            headers: ["Idempotency-Key": "shadow"])
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.json?["results"]?[0]?["status"]?.stringValue, "unknownInsight")

        // Transparency shows the served insight only.
        r = try daemon.request("POST", "/v1/subjects/transparency", key: caller.key, json: #"{"subject":{"account":"acct-0"}}"#)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let shown = try XCTUnwrap(r.json?["evaluations"]?[0]?["insights"]?.arrayValue)
        XCTAssertEqual(shown.map { $0["modelVersion"]?.stringValue }, ["2.0"])

        // Labels on the served insights of the first 100: coached sessions as fraud.
        var items: [String] = []
        for s in sent.prefix(100) {
            let outcome = s.coached ? #""confirmedFraud","fraudType":"authorityImpersonation""# : #""confirmedLegitimate""#
            items.append(#"{"insightId":"\#(s.insightId)","outcome":\#(outcome),"discoveredAt":"2027-01-10"}"#)
        }
        r = try daemon.request(
            "POST", "/v1/labels", key: caller.key, json: #"{"labels":[\#(items.joined(separator: ","))]}"#,
            headers: ["Idempotency-Key": "served"])
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(Set((r.json?["results"]?.arrayValue ?? []).map { $0["status"]?.stringValue }), ["accepted"])

        // The admin API's list of versions (the console's Models page) says which is the shadow.
        r = try daemon.request("GET", "/admin/v1/models", key: admin.key)
        XCTAssertEqual(
            (r.json?["versions"]?.arrayValue ?? []).map { "\($0["version"]?.stringValue ?? "") \($0["shadow"]?.boolValue ?? false)" },
            ["1.0 true", "2.0 false"])

        // The report: 2.0 served and 1.0 shadow, per category, counted independently here.
        r = try daemon.request("GET", "/admin/v1/model-performance?from=2027-01-10&to=2027-01-10", key: admin.key)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(try openAPISchemaErrors(try XCTUnwrap(r.json), schema: "ModelPerformance"), [])
        let rows = try XCTUnwrap(r.json?["versions"]?.arrayValue)
        XCTAssertEqual(
            rows.map { "\($0["modelVersion"]?.stringValue ?? "") \($0["category"]?.stringValue ?? "") \($0["role"]?.stringValue ?? "")" },
            ["1.0 account shadow", "1.0 payment shadow", "2.0 account served", "2.0 payment served"])
        for row in rows {
            let version = row["modelVersion"]?.stringValue ?? "",
                category = OperationCategory(rawValue: row["category"]?.stringValue ?? "")!
            let mine = sent.filter { $0.category == category }
            func value(_ s: Sent) -> InsightValue? { version == "2.0" ? s.value : oneDotZero["\(s.coached) \(category)"] }
            let context = "\(version) \(category)"
            XCTAssertEqual(row["evaluations"]?.numberValue, Double(mine.count), context)
            for v in InsightValue.allCases {
                XCTAssertEqual(row["values"]?[v.rawValue]?.numberValue, Double(mine.filter { value($0) == v }.count), "\(context) \(v)")
                let labelledIds = Set(sent.prefix(100).map(\.eventId)), labelled = mine.filter { labelledIds.contains($0.eventId) }
                XCTAssertEqual(
                    row["labelled"]?["confirmedFraud"]?[v.rawValue]?.numberValue,
                    Double(labelled.filter { $0.coached && value($0) == v }.count), "\(context) fraud \(v)")
                XCTAssertEqual(
                    row["labelled"]?["confirmedLegitimate"]?[v.rawValue]?.numberValue,
                    Double(labelled.filter { !$0.coached && value($0) == v }.count), "\(context) legitimate \(v)")
            }
            // Every score in bin 0 (2.0) or bin 1 (1.0) of its reference.
            let expected = version == "2.0" ? Self.psi([1, 0], [0.3, 0.7]) : Self.psi([0, 1], [0.6, 0.4])
            XCTAssertEqual(try XCTUnwrap(row["psi"]?["value"]?.numberValue, context), expected, accuracy: 1e-9, context)
            XCTAssertEqual(row["psi"]?["sample"]?.numberValue, Double(mine.count), context)
        }

        // insightctl models report prints each row's role and drift.
        let table = ModelCommands.renderModelPerformance(try XCTUnwrap(r.json)).split(separator: "\n").map(String.init)
        XCTAssertTrue(table[1].hasPrefix("VERSION  ROLE    CATEGORY") && table[1].hasSuffix("PSI"), table[1])
        let shadowLine = try XCTUnwrap(table.first { $0.hasPrefix("1.0      shadow  payment") }, table.joined(separator: "\n"))
        XCTAssertTrue(shadowLine.hasSuffix(String(format: "%.3f of 520", Self.psi([0, 1], [0.6, 0.4]))), shadowLine)

        // The metric, once a version and category hold 500 scores: payment only.
        let metrics = try daemon.scrape()
        let samples = metrics.split(separator: "\n").filter { $0.hasPrefix("insightd_model_score_psi{") }
        XCTAssertEqual(samples.count, 2, metrics)
        for (version, expected) in [("2.0", Self.psi([1, 0], [0.3, 0.7])), ("1.0", Self.psi([0, 1], [0.6, 0.4]))] {
            let line = try XCTUnwrap(samples.first { $0.contains(#"version="\#(version)""#) && $0.contains(#"category="payment""#) })
            XCTAssertEqual(try XCTUnwrap(Double(line.split(separator: " ").last.map(String.init) ?? "")), expected, accuracy: 1e-6)
        }

        // One warning per version and category that passed 0.2, naming no evaluation or subject.
        let log = String(decoding: try daemon.logText(), as: UTF8.self)
        let warnings = log.split(separator: "\n").filter { $0.contains("model score drift") }
        XCTAssertEqual(warnings.count, 2, log.suffix(2_000).description)
        for line in warnings {
            XCTAssertTrue(line.contains(#""level":"warning""#), String(line))
            XCTAssertFalse(line.contains("acct-") || sent.contains { line.contains($0.eventId.prefix(30)) }, String(line))
        }
    }

    func testWithoutAShadowNothingMoreIsStoredOrReported() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        let caller = try daemon.createCaller(roles: [.evaluate])
        let admin = try daemon.createCaller(roles: [.admin])
        let body =
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":[\#(InteractionEvents.genuine)],"device":\#(Self.noCall)}}"#
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: caller.key, json: body).status, 200)
        let today = String(Timestamp.format(SystemClock().now()).prefix(10))
        let r = try daemon.request("GET", "/admin/v1/model-performance?from=\(today)&to=\(today)", key: admin.key)
        let rows = try XCTUnwrap(r.json?["versions"]?.arrayValue)
        XCTAssertEqual(rows.map { $0["role"]?.stringValue }, ["served"])
        let versions = try daemon.request("GET", "/admin/v1/models", key: admin.key).json?["versions"]?.arrayValue ?? []
        XCTAssertEqual(versions.compactMap { $0["shadow"]?.boolValue }, [false, false])
        // The committed 2.0 has a reference: one score is a (tiny) sample with a PSI.
        XCTAssertEqual(rows.first?["psi"]?["sample"]?.numberValue, 1)
    }

    func testCheckConfigAndReloadRefuseAShadowThatCannotBe() throws {
        let models = try self.models()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("cc-\(UUID().uuidString)").path
        func problems(_ shadow: String, modelsDir: String? = nil) throws -> [String] {
            var environment = ["INSIGHTD_STATE_DIR": state, "INSIGHTD_MODEL_SHADOW": shadow]
            environment["INSIGHTD_MODELS_DIR"] = modelsDir ?? models
            return Daemon.configurationProblems(try Settings.load(from: environment).get())
        }
        XCTAssertEqual(try problems("1.0"), [])
        XCTAssertEqual(try problems("2.0"), ["models in \(models): \(models): shadow version 2.0 is the current version"])
        XCTAssertEqual(
            try problems("3.0"), ["models in \(models): \(models): shadow version 3.0 is not among the versions found (1.0, 2.0)"])
        let missing = state + "/no-models"
        XCTAssertEqual(
            Daemon.configurationProblems(
                try Settings.load(from: [
                    "INSIGHTD_STATE_DIR": state, "INSIGHTD_MODEL_SHADOW": "1.0",
                    "INSIGHTD_MODELS_DIR": missing
                ]).get()),
            ["INSIGHTD_MODELS_DIR \(missing) does not exist"])
        var settings = Settings()
        settings.stateDirectory = state
        settings.modelsDirectory = missing
        settings.shadowModels = ["1.0"]
        XCTAssertEqual(
            Daemon.configurationProblems(settings),
            ["INSIGHTD_MODEL_SHADOW names versions, but the models directory \(missing) does not exist"])
        XCTAssertEqual(
            Daemon.main(
                arguments: ["insightd", "--check-config"],
                environment: ["INSIGHTD_STATE_DIR": state, "INSIGHTD_MODELS_DIR": models, "INSIGHTD_MODEL_SHADOW": "2.0"]), 78)
        XCTAssertEqual(
            Daemon.main(
                arguments: ["insightd", "--check-config"],
                environment: ["INSIGHTD_STATE_DIR": state, "INSIGHTD_MODELS_DIR": models, "INSIGHTD_MODEL_SHADOW": "1.0"]), 0)

        // A daemon does not start with such a shadow, and a reload (SIGHUP) that would make one
        // is refused, keeping the models in use.
        XCTAssertThrowsError(
            try TestDaemon(.inProcess) {
                $0.modelsDirectory = models; $0.shadowModels = ["3.0"]
            }
        ) { error in
            XCTAssertTrue("\(error)".contains("shadow version 3.0 is not among the versions found"), "\(error)")
        }
        let daemon = try TestDaemon(.inProcess) {
            $0.modelsDirectory = models; $0.shadowModels = ["1.0"]
        }
        let manifest = models + "/1.0/manifest.json"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        try text.replacingOccurrences(of: #""status":"active""#, with: #""status":"withdrawn""#)
            .write(toFile: manifest, atomically: false, encoding: .utf8)
        XCTAssertThrowsError(try daemon.service.reloadModels()) { error in
            XCTAssertTrue("\(error)".contains("shadow version 1.0 is withdrawn"), "\(error)")
        }
        // The models in use stay: 1.0 still scores beside 2.0.
        let caller = try daemon.createCaller(roles: [.evaluate]), admin = try daemon.createCaller(roles: [.admin])
        let body =
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":[\#(InteractionEvents.genuine)],"device":\#(Self.noCall)}}"#
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: caller.key, json: body).status, 200)
        let today = String(Timestamp.format(SystemClock().now()).prefix(10))
        let rows = try XCTUnwrap(
            try daemon.request("GET", "/admin/v1/model-performance?from=\(today)&to=\(today)", key: admin.key)
                .json?["versions"]?.arrayValue)
        XCTAssertEqual(
            rows.map { "\($0["modelVersion"]?.stringValue ?? "") \($0["role"]?.stringValue ?? "")" }, ["1.0 shadow", "2.0 served"])
    }
}
