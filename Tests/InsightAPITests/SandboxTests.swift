import DaemonTesting
import Foundation
import JSON
import XCTest

/// The sandbox environment and its forced outcomes (`Insight-Override`).
final class SandboxTests: XCTestCase {
    var daemon: TestDaemon!
    var sandboxKey = ""
    var productionKey = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        sandboxKey = try daemon.createCaller(roles: [.evaluate, .labels], environment: .sandbox).key
        productionKey = try daemon.createCaller(roles: [.evaluate, .labels]).key
    }

    override func tearDown() { daemon = nil }

    static let body =
        #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1},{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"1.0"}]}"#

    func evaluate(_ override: String?, key: String? = nil) throws -> TestDaemon.Response {
        try daemon.request(
            "POST", "/v1/evaluations", key: key ?? sandboxKey, json: Self.body,
            headers: override.map { ["Insight-Override": $0] } ?? [:])
    }

    func testEveryValueCanBeForced() throws {
        for value in ["unknown", "medium", "high"] {
            let r = try evaluate("isLikelyBeingCoached=\(value)")
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.json?["environment"]?.stringValue, "sandbox")
            for i in 0..<2 {
                XCTAssertEqual(r.json?["insights"]?[i]?["outcome"]?["value"]?.stringValue, value)
                XCTAssertEqual(r.json?["insights"]?[i]?["reasons"]?[0]?.stringValue, "sandboxOverride")
            }
            XCTAssertEqual(r.json?["insights"]?[1]?["modelVersion"]?.stringValue, "1.0")
        }
    }

    func testEveryInsightErrorCanBeForced() throws {
        for code in [
            "insightEvaluationFailed", "insightUnavailable", "insightVersionIncompatible",
            "insightVersionUnavailable", "rateLimitError"
        ] {
            let r = try evaluate(" isLikelyBeingCoached = error:\(code) ")
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.json?["insights"]?[0]?["outcome"]?["error"]?["code"]?.stringValue, code)
        }
    }

    func testEvaluationErrorsAreForcedWithTheirRealStatusAndHeaders() throws {
        var r = try evaluate("evaluation=error:rateLimitExceeded")
        XCTAssertEqual(r.status, 429)
        XCTAssertEqual(r.code, "rateLimitExceeded")
        XCTAssertEqual(r.headers["retry-after"], "1")
        XCTAssertEqual(r.headers["ratelimit"], #""caller";r=0;t=1"#)
        XCTAssertEqual(r.headers["ratelimit-policy"], #""caller";q=10000;w=1"#)
        r = try evaluate("evaluation=error:serverError")
        XCTAssertEqual(r.status, 503)
        XCTAssertEqual(r.code, "serverError")
        XCTAssertEqual(r.headers["retry-after"], "1")
        r = try evaluate("evaluation=error:denied")
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(r.code, "denied")
        r = try evaluate("evaluation=error:contextInvalid,isLikelyBeingCoached=high")
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.code, "contextInvalid")
        // A forced error stores nothing.
        let count = try SQLiteCount.evaluations(daemon)
        _ = try evaluate("evaluation=error:denied")
        XCTAssertEqual(try SQLiteCount.evaluations(daemon), count)
    }

    func testProductionCredentialsAreRefused() throws {
        let r = try evaluate("isLikelyBeingCoached=high", key: productionKey)
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(r.code, "overrideNotAllowed")
        XCTAssertEqual(try evaluate(nil, key: productionKey).status, 200)
    }

    func testMalformedOverridesAreContextInvalid() throws {
        for header in [
            "", "high", "isLikelyBeingCoached=low", "isLikelyBeingCoached=error:nope",
            "isLikelyBeingPhished=high", "evaluation=high", "evaluation=error:notFound",
            "isLikelyBeingCoached=high,isLikelyBeingCoached=medium", "isLikelyBeingCoached=high,",
            Array(repeating: "evaluation=error:denied", count: 9).joined(separator: ",")
        ] {
            let r = try evaluate(header)
            XCTAssertEqual(r.status, 400, header)
            XCTAssertEqual(r.code, "contextInvalid", header)
            XCTAssertEqual(r.string("field"), "Insight-Override", header)
        }
    }
}

/// Counts rows behind the daemon's back.
enum SQLiteCount {
    static func evaluations(_ daemon: TestDaemon) throws -> String? {
        try InsightStorageCount(path: daemon.service.settings.databasePath).count("evaluations")
    }
}
