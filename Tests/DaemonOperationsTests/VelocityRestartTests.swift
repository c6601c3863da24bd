import DaemonTesting
import Foundation
import InsightApp
import InsightDomain
import InsightStorage
import JSON
import XCTest

/// A restart on a store with many evaluations (issue 22): the daemon answers while velocity's
/// counts are replayed, says so at `/readyz` and in `/metrics`, escalates by velocity again once
/// they are, and counts an evaluation made during the replay once.
final class VelocityRestartTests: XCTestCase {
    func testTheDaemonAnswersWhileVelocityIsRebuiltAndEscalatesAfterwards() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        let (callerId, key) = try daemon.createCaller(roles: [.evaluate])
        func evaluate(_ account: String) throws -> (status: Int, value: String?, reasons: [String]) {
            let r = try daemon.request(
                "POST", "/v1/evaluations", key: key,
                json:
                    #"{"operationCategory":"account","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"\#(account)"}}"#
            )
            let insight = r.json?["insights"]?[0]
            return (
                r.status, insight?["outcome"]?["value"]?.stringValue,
                insight?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
            )
        }
        func readyz() throws -> (status: Int, velocity: String?) {
            let r = try daemon.request("GET", "/readyz")
            return (r.status, r.string("velocity"))
        }
        func velocityReadyMetric() throws -> String? {
            let text = try daemon.scrape()
            return text.split(separator: "\n").first { $0.hasPrefix("insightd_velocity_ready ") }
                .map { String($0.dropFirst("insightd_velocity_ready ".count)) }
        }
        XCTAssertEqual(try readyz().velocity, "ready")
        XCTAssertEqual(try velocityReadyMetric(), "1")

        // Eight evaluations of one account and seven of another now, and enough others over the
        // week that replaying them takes a while (seconds, in a debug build).
        for _ in 0..<8 { XCTAssertEqual(try evaluate("busy").value, "unknown") }
        for _ in 0..<7 { XCTAssertEqual(try evaluate("calm").value, "unknown") }
        let now = SystemClock().now()
        try SyntheticHistory(
            count: 400_000, end: now - 1_000, span: VelocityWindow.week.milliseconds - 3_600_000,
            callerId: callerId
        )
        .insert(intoDatabaseAt: Settings.databasePath(stateDirectory: daemon.service.settings.stateDirectory))

        try daemon.restart(waitForVelocity: false)
        // Ready at once: evaluations are answered, without escalation by velocity.
        XCTAssertFalse(daemon.service.readiness.isVelocityReady, "the replay must still run for this test to mean anything")
        XCTAssertEqual(try readyz().status, 200)
        XCTAssertEqual(try readyz().velocity, "rebuilding")
        XCTAssertEqual(try velocityReadyMetric(), "0")
        let during = try evaluate("busy")
        XCTAssertEqual(during.status, 200)
        XCTAssertEqual(during.value, "unknown", "no escalation while the counts are short")
        XCTAssertEqual(try evaluate("calm").status, 200)
        XCTAssertFalse(daemon.service.readiness.isVelocityReady, "the replay ended before the checks above")

        try daemon.awaitVelocity()
        XCTAssertEqual(try readyz().velocity, "ready")
        XCTAssertEqual(try velocityReadyMetric(), "1")
        // Stored + made during the replay + this one: "busy" reaches ten and escalates (not if the
        // one made during the replay were lost), "calm" nine and does not (it would if that one
        // were counted twice, live and replayed); its next one is the tenth.
        let tenth = try evaluate("busy")
        XCTAssertEqual(tenth.value, "medium")
        XCTAssertTrue(tenth.reasons.contains("accountVelocity"), "\(tenth.reasons)")
        XCTAssertEqual(try evaluate("calm").value, "unknown")
        XCTAssertEqual(try evaluate("calm").value, "medium")
        let replayed = try XCTUnwrap(
            try String(contentsOf: daemon.logFile, encoding: .utf8)
                .split(separator: "\n").last { $0.contains(#""msg":"velocity rebuilt""#) })
        XCTAssertTrue(replayed.contains(#""evaluations":400015"#), String(replayed))
    }
}
