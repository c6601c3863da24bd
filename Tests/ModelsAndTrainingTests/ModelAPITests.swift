import DaemonTesting
import Foundation
import JSON
import XCTest

/// Evaluations answered by the committed models in `models/`, through the live API.
final class ModelAPITests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        (_, key) = try daemon.createCaller(roles: [.evaluate])
    }

    override func tearDown() { daemon = nil }

    func evaluate(events: String, device: String, modelVersion: String? = nil) throws -> JSONValue {
        let version = modelVersion.map { #","modelVersion":"\#($0)""# } ?? ""
        let body =
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1\#(version)}],"interaction":{"events":[\#(events)],"device":\#(device)}}"#
        let r = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        return try XCTUnwrap(r.json?["insights"]?[0])
    }

    func testCoachedSessionIsFlaggedWithReasons() throws {
        let insight = try evaluate(
            events: InteractionEvents.coached,
            device: #"{"activeCall":true,"callStartedBeforeSession":true,"screenSharing":false,"remoteAccessApp":false}"#)
        let value = try XCTUnwrap(insight["outcome"]?["value"]?.stringValue)
        XCTAssertTrue(["medium", "high"].contains(value), "coached session answered \(value)")
        guard case .array(let reasons)? = insight["reasons"] else { return XCTFail("no reasons") }
        XCTAssertFalse(reasons.isEmpty)
        XCTAssertEqual(insight["modelVersion"]?.stringValue, "2.0")
        XCTAssertEqual(insight["newestModelVersion"]?.stringValue, "2.0")
        guard case .bool(true)? = insight["isUsingCurrentModel"] else { return XCTFail("not current") }
    }

    func testPriorAndUnknownModelVersions() throws {
        let prior = try evaluate(events: InteractionEvents.genuine, device: "{}", modelVersion: "1.0")
        XCTAssertEqual(prior["modelVersion"]?.stringValue, "1.0")
        guard case .bool(false)? = prior["isUsingCurrentModel"] else { return XCTFail("1.0 reported as current") }
        XCTAssertNotNil(prior["outcome"]?["value"])
        let missing = try evaluate(events: InteractionEvents.genuine, device: "{}", modelVersion: "9.9")
        XCTAssertEqual(missing["outcome"]?["error"]?["code"]?.stringValue, "insightVersionUnavailable")
    }

    /// A payment typed as the web capture kit records dictation: no device facts, a first input
    /// after 10 s, the payee in chunks of three characters 4.5 s apart, 10 s before paying. Its
    /// score lies between the web profile's `high` threshold for payments and the category's:
    /// named as the web kit's (`interaction.source`), it is judged with the web thresholds;
    /// without a source, or from another platform, with the category's.
    static let webDictatedEvents: String = {
        var events = [#"{"t":0,"type":"sessionStart"}"#, #"{"t":10000,"type":"tap"}"#, #"{"t":10030,"type":"fieldFocus","field":"payee"}"#]
        var t = 10030
        for k in 0..<22 {
            t += k > 0 && k % 3 == 0 ? 4500 : 200
            events.append(#"{"t":\#(t),"type":"keyDown","field":"payee"}"#)
        }
        t += 300; events.append(#"{"t":\#(t),"type":"fieldBlur","field":"payee"}"#)
        t += 600; events.append(#"{"t":\#(t),"type":"tap"}"#)
        t += 30; events.append(#"{"t":\#(t),"type":"fieldFocus","field":"amount"}"#)
        for k in 0..<3 { t += k == 0 ? 400 : 200; events.append(#"{"t":\#(t),"type":"keyDown","field":"amount"}"#) }
        t += 300; events.append(#"{"t":\#(t),"type":"fieldBlur","field":"amount"}"#)
        t += 10000; events.append(#"{"t":\#(t),"type":"tap"}"#)
        t += 60; events.append(#"{"t":\#(t),"type":"submit"}"#)
        return events.joined(separator: ",")
    }()

    func testTheWebKitsSessionsAreJudgedWithTheWebThresholds() throws {
        func value(source: String?) throws -> String? {
            let member = source.map { #","source":{"kit":"insight-capture-web","version":"1.0.0","platform":"\#($0)"}"# } ?? ""
            let body =
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":[\#(Self.webDictatedEvents)]\#(member)}}"#
            let r = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
            XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
            return r.json?["insights"]?[0]?["outcome"]?["value"]?.stringValue
        }
        XCTAssertEqual(try value(source: "web"), "high")
        XCTAssertEqual(try value(source: nil), "medium", "no source: the category's thresholds, as before sources existed")
        XCTAssertEqual(try value(source: "android"), "medium", "a platform without thresholds of its own")
    }

    func testHostileInteractionIsContextInvalid() throws {
        // Far past the session bound of the feature extractor, yet within the edge limit.
        let r = try daemon.request(
            "POST", "/v1/evaluations", key: key,
            json:
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":86400000,"type":"submit"}]}}"#
        )
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.code, "contextInvalid")
        XCTAssertNotNil(r.string("field"))
        let s = try daemon.request(
            "POST", "/v1/evaluations", key: key,
            json:
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"summary":{"noSuchFeature":1}}}"#
        )
        XCTAssertEqual(s.status, 422)
        XCTAssertEqual(s.string("field"), "interaction.summary.noSuchFeature")
    }

    func testCatalogListsModelVersions() throws {
        let r = try daemon.request("GET", "/v1/insights", key: key)
        let entry = try XCTUnwrap(r.json?["insights"]?[0])
        XCTAssertEqual(entry["newestModelVersion"]?.stringValue, "2.0")
        guard case .array(let versions)? = entry["modelVersions"] else { return XCTFail("no versions") }
        XCTAssertEqual(versions.compactMap { $0["version"]?.stringValue }, ["1.0", "2.0"])
    }
}

/// Operator control of model versions: the current one, and withdrawal.
final class ModelVersionControlTests: XCTestCase {
    /// A copy of the committed models whose manifests a test may edit (manifests are not
    /// covered by the model file's sha256, by design: withdrawal is an edit of the manifest).
    func copyOfModels() throws -> URL {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("models-\(UUID().uuidString)")
        try FileManager.default.copyItem(atPath: TestDaemon.committedModels, toPath: copy.path)
        addTeardownBlock { try? FileManager.default.removeItem(at: copy) }
        return copy
    }

    func evaluate(_ daemon: TestDaemon, key: String, modelVersion: String?) throws -> JSONValue {
        let version = modelVersion.map { #","modelVersion":"\#($0)""# } ?? ""
        let r = try daemon.request(
            "POST", "/v1/evaluations", key: key,
            json: #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1\#(version)}]}"#)
        XCTAssertEqual(r.status, 200)
        return try XCTUnwrap(r.json?["insights"]?[0])
    }

    func testAWithdrawnVersionAnswersVersionUnavailable() throws {
        let models = try copyOfModels()
        let manifest = models.appendingPathComponent("1.0/manifest.json")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        XCTAssertTrue(text.contains(#""status": "active""#))
        try text.replacingOccurrences(of: #""status": "active""#, with: #""status": "withdrawn""#)
            .write(to: manifest, atomically: false, encoding: .utf8)
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = models.path }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(
            try evaluate(daemon, key: key, modelVersion: "1.0")["outcome"]?["error"]?["code"]?.stringValue,
            "insightVersionUnavailable")
        XCTAssertNotNil(try evaluate(daemon, key: key, modelVersion: "2.0")["outcome"]?["value"])
        let catalog = try daemon.request("GET", "/v1/insights", key: key).json
        XCTAssertEqual(catalog?["insights"]?[0]?["modelVersions"]?[0]?["status"]?.stringValue, "withdrawn")
    }

    func testTheCurrentVersionIsConfigurable() throws {
        let daemon = try TestDaemon(.inProcess) {
            $0.modelsDirectory = TestDaemon.committedModels
            $0.currentModel = "1.0"
        }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let insight = try evaluate(daemon, key: key, modelVersion: nil)
        XCTAssertEqual(insight["modelVersion"]?.stringValue, "1.0")
        XCTAssertEqual(insight["newestModelVersion"]?.stringValue, "1.0")
        XCTAssertEqual(try evaluate(daemon, key: key, modelVersion: "2.0")["isUsingCurrentModel"], .bool(false))
    }

    func testReloadSwapsModelsAndKeepsTheOldOnesOnFailure() throws {
        let models = try copyOfModels()
        let daemon = try TestDaemon(.inProcess) {
            $0.modelsDirectory = models.path
            $0.modelsDirectoryExplicit = true
        }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        // Tamper with the current model: the reload is refused and 2.0 keeps answering.
        let model = models.appendingPathComponent("2.0/model.json")
        var bytes = try Data(contentsOf: model)
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: model)
        XCTAssertThrowsError(try daemon.service.reloadModels()) { error in
            XCTAssertTrue("\(error)".contains("sha256"), "\(error)")
        }
        XCTAssertEqual(try evaluate(daemon, key: key, modelVersion: nil)["modelVersion"]?.stringValue, "2.0")
        // Take 2.0 away and name 1.0 current: a reload serves it without a restart.
        try FileManager.default.removeItem(at: models.appendingPathComponent("2.0"))
        try #"{"insightType": "isLikelyBeingCoached", "current": "1.0"}"#
            .write(to: models.appendingPathComponent("registry.json"), atomically: false, encoding: .utf8)
        try daemon.service.reloadModels()
        XCTAssertEqual(try evaluate(daemon, key: key, modelVersion: nil)["modelVersion"]?.stringValue, "1.0")
    }
}
