import DaemonTesting
import Dispatch
import Foundation
import InsightDomain
@testable import InsightAPI
import InsightServices
import JSON
import XCTest

/// Bodies built to cost the daemon as much as their size allows. Each body's parse is linear in
/// its length and stops at the first limit no request needs, so one caller's worst bodies cannot
/// hold other callers' requests on the same loop threads.
final class HostileInputTests: XCTestCase {
    /// The default `INSIGHTD_MAX_BODY_BYTES`: the largest body a caller can send.
    static let maxBody = 1 << 20

    static let insights = #"[{"type":"isLikelyBeingCoached","schemaVersion":1}]"#

    /// `prefix`, then `unit(i)` for i = 0, 1, … joined by commas while the body stays within
    /// `bytes`, then `suffix`.
    static func filled(_ prefix: String, _ unit: (Int) -> String, _ suffix: String, bytes: Int = maxBody - 64) -> [UInt8] {
        var body = Array(prefix.utf8)
        body.reserveCapacity(bytes)
        var i = 0
        while true {
            let next = Array(((i > 0 ? "," : "") + unit(i)).utf8)
            guard body.count + next.count + suffix.utf8.count <= bytes else { break }
            body += next
            i += 1
        }
        return body + Array(suffix.utf8)
    }

    /// The worst bodies found: each is either quadratic for a parser that compares every name
    /// with every earlier one, or as large as the limit allows in a shape that costs the most
    /// per byte.
    static func worstBodies() -> [(name: String, body: [UInt8])] {
        let root = #"{"operationCategory":"payment","insights":\#(insights),"#
        let fullObject = "{" + (0..<256).map { "\"m\($0)\":0" }.joined(separator: ",") + "}"
        let deep = String(repeating: "[", count: 30) + "0" + String(repeating: "]", count: 30)
        return [
            // The object of the report: 40,000 different names (430 KB).
            ("40,000-member object", filled("{", { "\"k\($0)\":0" }, "}", bytes: 430_000)),
            ("40,000-member label", filled(#"{"labels":[{"#, { "\"k\($0)\":0" }, "}]}", bytes: 430_000)),
            ("objects of 256 members", filled(root + #""x":["#, { _ in fullObject }, "]}")),
            ("many tiny values", filled(root + #""x":["#, { _ in "0" }, "]}")),
            ("deep nesting, repeated", filled(root + #""x":["#, { _ in deep }, "]}")),
            ("long escapes", filled(root + #""requestId":""#, { _ in #"\u00e9\ud83d\ude00"# }, "\"}")),
            ("long number", filled(root + #""x":0.3"#, { _ in "3333333333" }, "}")),
            ("unknown summary features", filled(root + #""interaction":{"summary":{"#, { "\"f\($0)\":1" }, "}}}", bytes: 1_800))
        ]
    }

    // MARK: Limits against the API's largest valid bodies

    func testTheLargestValidBodiesFitTheParserLimits() throws {
        // 5,000 events (the most accepted), through the tree path rather than the readers.
        var events = [#"{"t":0,"type":"sessionStart"}"#]
        for i in 1..<5_000 { events.append(#"{"t":\#(i),"type":"keyDown","field":"payee"}"#) }
        let insight = #"{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"1.0"}"#
        let body = Array(
            #"""
            {"requestId":"txn-1","operationCategory":"payment","insights":[\#(Array(repeating: insight, count: 4).joined(separator: ","))],
             "subject":{"account":"a","device":"d","counterparty":"c"},
             "interaction":{"events":[\#(events.joined(separator: ","))],
                            "device":{"activeCall":true,"callStartedBeforeSession":false,"screenSharing":false,"remoteAccessApp":false}},
             "transaction":{"newCounterparty":true,"amountBand":"high"}}
            """#.utf8)
        let request = try EvaluationRequest.decode(try Problem.parseBody(body))
        guard case .events(let decoded, _) = request.interaction else { return XCTFail("no events") }
        XCTAssertEqual(decoded.count, 5_000)
        // 1,000 labels (the most accepted).
        let label =
            #"{"insightId":"0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a21","outcome":"confirmedFraud","fraudType":"other","discoveredAt":"2026-01-01"}"#
        let labels = Array(#"{"labels":[\#(Array(repeating: label, count: 1_000).joined(separator: ","))]}"#.utf8)
        XCTAssertEqual(try Problem.parseBody(labels)["labels"]?.arrayValue?.count, 1_000)
        // A summary of more features than there are is the summary's own 422, not a parse limit.
        let summary = Array(
            #"{"operationCategory":"payment","insights":\#(Self.insights),"interaction":{"summary":{\#((0..<65).map { "\"f\($0)\":1" }.joined(separator: ","))}}}"#
                .utf8)
        XCTAssertThrowsError(try EvaluationRequest.decode(body: summary)) { error in
            XCTAssertEqual((error as? Problem)?.status, 422)
            XCTAssertEqual((error as? Problem)?.field, "interaction.summary")
        }
    }

    func testBodiesOverAParserLimitAreRefusedAsSuch() {
        for (name, body) in Self.worstBodies() where name != "long escapes" && name != "long number" && name != "unknown summary features" {
            XCTAssertThrowsError(try Problem.parseBody(body), name) { error in
                guard let problem = error as? Problem else { return XCTFail("\(name): \(error)") }
                XCTAssertEqual(problem.status, 400, name)
                XCTAssertEqual(problem.code, .contextInvalid, name)
                XCTAssertEqual(problem.field, "(body)", name)
                XCTAssertTrue(
                    problem.detail.hasPrefix("The request body is beyond what any request of this API needs: "),
                    "\(name): \(problem.detail)")
            }
        }
    }

    // MARK: Live

    /// Four connections send the worst bodies with a sandbox key, over and over, to every
    /// endpoint that reads a body, while another client times `/livez` and a production
    /// evaluation. Neither may wait for the attack: the bound is generous for a loaded 2-core
    /// machine and a debug build, yet far below the seconds one such body held a loop before
    /// its parse became linear.
    func testWorstBodiesFromSeveralConnectionsDoNotHoldOtherCallers() throws {
        let daemon = try TestDaemon(.live)
        let attacker = try daemon.createCaller(roles: [.evaluate, .labels], environment: .sandbox, name: "attacker").key
        let production = try daemon.createCaller(roles: [.evaluate], name: "production").key
        let endpoints: [(method: String, path: String, headers: String)] = [
            ("POST", "/v1/evaluations", ""),
            ("POST", "/v1/labels", "Idempotency-Key: hostile-1\r\n"),
            ("PUT", "/v1/authorization", ""),
            ("POST", "/v1/evaluations/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a20/consumption", "")
        ]
        let requests: [(name: String, bytes: [UInt8])] = Self.worstBodies().enumerated().flatMap { i, entry in
            (0..<endpoints.count).map { e in
                let endpoint = endpoints[(i + e) % endpoints.count]
                let head =
                    "\(endpoint.method) \(endpoint.path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                    + "Authorization: Bearer \(attacker)\r\nContent-Type: application/json\r\n\(endpoint.headers)"
                    + "Content-Length: \(entry.body.count)\r\n\r\n"
                return ("\(entry.name) to \(endpoint.method) \(endpoint.path)", Array(head.utf8) + entry.body)
            }
        }
        let evaluation = RequestBodies.evaluation(#","subject":{"account":"acct-live","device":"dev-live"}"#)
        // Both answer before the attack, and warm the daemon up.
        XCTAssertEqual(try daemon.request("GET", "/livez").status, 200)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: production, json: evaluation).status, 200)

        let attackSeconds = 3.0
        let deadline = DispatchTime.now() + attackSeconds
        let answers = AttackLog()
        let attackers = DispatchGroup()
        for connection in 0..<4 {
            attackers.enter()
            Thread.detachNewThread {
                defer { attackers.leave() }
                var next = connection * requests.count / 4
                while DispatchTime.now() < deadline {
                    let request = requests[next % requests.count]
                    next += 1
                    let started = DispatchTime.now().uptimeNanoseconds
                    let status = (try? daemon.exchange(request.bytes).status) ?? -1
                    answers.record(request.name, status: status, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                }
            }
        }
        Thread.sleep(forTimeInterval: 0.2)  // the attack under way
        var livez: [Double] = [], evaluations: [Double] = [], failures: [String] = []
        while DispatchTime.now() < deadline {
            let (live, liveSeconds) = Self.timed { try daemon.request("GET", "/livez") }
            livez.append(liveSeconds)
            if live?.status != 200 { failures.append("/livez: \(live?.status ?? -1)") }
            let (evaluated, evaluationSeconds) = Self.timed {
                try daemon.request("POST", "/v1/evaluations", key: production, json: evaluation)
            }
            evaluations.append(evaluationSeconds)
            if evaluated?.status != 200 { failures.append("evaluation: \(evaluated?.status ?? -1)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTAssertEqual(attackers.wait(timeout: .now() + 120), .success, "the attack's requests were not answered")

        let sent = answers.entries
        let slowest = sent.max { $0.seconds < $1.seconds }
        print(
            """
            hostile input: \(sent.count) attack requests (\(sent.filter { $0.status == 400 }.count) answered 400, \
            slowest \(Self.ms(slowest?.seconds ?? 0)) ms: \(slowest?.name ?? "-")); \
            /livez max \(Self.ms(livez.max() ?? 0)) ms, median \(Self.ms(Self.median(livez))) ms over \(livez.count); \
            production evaluation max \(Self.ms(evaluations.max() ?? 0)) ms, median \(Self.ms(Self.median(evaluations))) ms over \(evaluations.count)
            """)
        XCTAssertEqual(failures, [])
        XCTAssertGreaterThanOrEqual(livez.count, 5, "too few probes: the attack held the prober")
        XCTAssertLessThan(livez.max() ?? .infinity, 0.5, "/livez waited for the attack")
        XCTAssertLessThan(evaluations.max() ?? .infinity, 1.0, "a production evaluation waited for the attack")
        for entry in sent {
            XCTAssertTrue((400..<500).contains(entry.status), "\(entry.name): \(entry.status)")
        }
    }

    static func timed<T>(_ operation: () throws -> T) -> (T?, Double) {
        let started = DispatchTime.now().uptimeNanoseconds
        let result = try? operation()
        return (result, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
    }

    static func ms(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }

    static func median(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : values.sorted()[values.count / 2]
    }
}

/// The attack's answers, from several threads.
final class AttackLog: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var storage: [(name: String, status: Int, seconds: Double)] = []

    func record(_ name: String, status: Int, seconds: Double) {
        lock.lock()
        storage.append((name, status, seconds))
        lock.unlock()
    }

    var entries: [(name: String, status: Int, seconds: Double)] { lock.lock(); defer { lock.unlock() }; return storage }
}
