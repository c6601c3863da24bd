import DaemonTesting
import Foundation
import InsightControl
import JSON
import XCTest

/// `insightctl models list | set-current | withdraw` on a copy of models/, and a daemon serving
/// each change after its reload.
final class ModelsCommandTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("models-\(UUID().uuidString)")
        try FileManager.default.copyItem(atPath: TestDaemon.committedModels, toPath: directory.path)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    func insightctl(_ words: String...) -> Int32 {
        AdminCommand.main(arguments: ["insightctl"] + words + ["--models-dir", directory.path], environment: [:])
    }

    /// What a request naming `version` (or none) answers: the model version, or the error code.
    func answer(_ daemon: TestDaemon, key: String, version: String?) throws -> String {
        let named = version.map { #","modelVersion":"\#($0)""# } ?? ""
        let body =
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1\#(named)}],"interaction":{"events":[\#(InteractionEvents.genuine)],"device":{"activeCall":false,"callStartedBeforeSession":false,"screenSharing":false,"remoteAccessApp":false}}}"#
        let r = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let insight = try XCTUnwrap(r.json?["insights"]?[0])
        return insight["outcome"]?["error"]?["code"]?.stringValue ?? insight["modelVersion"]?.stringValue ?? "?"
    }

    func testSetCurrentAndWithdrawAreServedAfterAReload() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = self.directory.path }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(insightctl("models", "list"), 0)
        // The shadow setting is read as the daemon reads it: the current version cannot be one.
        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "models", "list", "--models-dir", directory.path],
                environment: ["INSIGHTD_MODEL_SHADOW": "1.0"]), 0)
        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "models", "list", "--models-dir", directory.path],
                environment: ["INSIGHTD_MODEL_SHADOW": "2.0"]), 1)
        XCTAssertEqual(try answer(daemon, key: key, version: nil), "2.0")
        // A version that runs as a shadow cannot be made current (the daemon's reload would refuse both).
        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "models", "set-current", "1.0", "--models-dir", directory.path],
                environment: ["INSIGHTD_MODEL_SHADOW": "1.0"]), 1)
        let unchanged = try JSONParser.parse(Array(try Data(contentsOf: directory.appendingPathComponent("registry.json"))))
        XCTAssertEqual(unchanged["current"]?.stringValue, "2.0")

        XCTAssertEqual(insightctl("models", "set-current", "1.0"), 0)
        XCTAssertEqual(try answer(daemon, key: key, version: nil), "2.0", "served only after a reload")
        try daemon.service.reloadModels()
        XCTAssertEqual(try answer(daemon, key: key, version: nil), "1.0")

        XCTAssertEqual(insightctl("models", "withdraw", "1.0"), 1, "the current version cannot be withdrawn")
        XCTAssertEqual(insightctl("models", "set-current", "2.0"), 0)
        XCTAssertEqual(insightctl("models", "withdraw", "1.0"), 0)
        XCTAssertEqual(insightctl("models", "withdraw", "1.0"), 0, "withdrawing again changes nothing")
        XCTAssertEqual(insightctl("models", "set-current", "1.0"), 1, "a withdrawn version cannot be current")
        XCTAssertEqual(insightctl("models", "set-current", "9.9"), 1, "no such version")
        try daemon.service.reloadModels()
        XCTAssertEqual(try answer(daemon, key: key, version: nil), "2.0")
        XCTAssertEqual(try answer(daemon, key: key, version: "1.0"), "insightVersionUnavailable")

        let manifest = try String(contentsOf: directory.appendingPathComponent("1.0/manifest.json"), encoding: .utf8)
        let original = try String(contentsOfFile: TestDaemon.committedModels + "/1.0/manifest.json", encoding: .utf8)
        XCTAssertEqual(
            manifest, original.replacingOccurrences(of: #""status": "active""#, with: #""status": "withdrawn""#),
            "only the status changed")
        let registry = try JSONParser.parse(Array(try Data(contentsOf: directory.appendingPathComponent("registry.json"))))
        XCTAssertEqual(registry["current"]?.stringValue, "2.0")
        XCTAssertEqual(registry["insightType"]?.stringValue, "isLikelyBeingCoached")
    }

    func testADirectoryTheDaemonWouldRefuseIsLeftAlone() throws {
        // A broken version directory: the whole directory no longer loads, so nothing is changed.
        let registryBefore = try Data(contentsOf: directory.appendingPathComponent("registry.json"))
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("3.0"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: directory.appendingPathComponent("3.0/manifest.json"))
        XCTAssertEqual(insightctl("models", "set-current", "1.0"), 1)
        XCTAssertEqual(insightctl("models", "list"), 1)
        XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("registry.json")), registryBefore)
    }
}
