import DaemonTesting
import Foundation
import InsightDomain
import InsightTesting
import JSON
import XCTest

/// Caller rate limits and the reporting penalty through the live API, with an injected clock.
final class RateLimitAPITests: XCTestCase {
    static let body = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#

    /// Every endpoint that reads or changes a subject takes tokens of the caller's bucket (a
    /// transparency page five), answers with the RateLimit fields, and 429 once they are gone:
    /// a key cannot guess identifiers faster than its rate.
    func testSubjectLookUpsCostTokensOfTheCallersQuota() throws {
        let daemon = try TestDaemon(.inProcess)
        let guesser = try daemon.createCaller(roles: [.evaluate], rate: 0.001, burst: 10).key
        for i in 0..<10 {
            let r = try daemon.request("POST", "/v1/authorization/query", key: guesser, json: #"{"subject":{"account":"guess-\#(i)"}}"#)
            XCTAssertEqual(r.status, 200, "guess \(i)")
            XCTAssertEqual(
                r.headers["ratelimit"].map { $0.hasPrefix("\"caller\";r=\(9 - i);") }, true, r.headers["ratelimit"] ?? "no RateLimit")
            XCTAssertEqual(r.headers["ratelimit-policy"].map { $0.hasPrefix("\"caller\";q=10;") }, true)
        }
        let refused = try daemon.request("POST", "/v1/authorization/query", key: guesser, json: #"{"subject":{"account":"guess-10"}}"#)
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.object?["reason"]?.stringValue, "callerRate")
        XCTAssertNotNil(refused.headers["retry-after"])
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/subjects/transparency", key: guesser,
                json: #"{"subject":{"account":"guess-10"}}"#
            ).status, 429)

        let reader = try daemon.createCaller(roles: [.evaluate], rate: 0.001, burst: 12).key
        for expected in [7, 2] {
            let page = try daemon.request("POST", "/v1/subjects/transparency", key: reader, json: #"{"subject":{"account":"p"}}"#)
            XCTAssertEqual(page.status, 200)
            XCTAssertEqual(
                page.headers["ratelimit"].map { $0.hasPrefix("\"caller\";r=\(expected);") }, true, page.headers["ratelimit"] ?? "")
        }
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/subjects/transparency", key: reader,
                json: #"{"subject":{"account":"p"}}"#
            ).status, 429, "two tokens bought a page")
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/authorization/query", key: reader,
                json: #"{"subject":{"account":"p"}}"#
            ).status, 200, "a query costs one")

        let admin = try daemon.createCaller(roles: [.admin], rate: 0.001, burst: 1).key
        let erased = try daemon.request("POST", "/v1/subjects/erasure", key: admin, json: #"{"subject":{"account":"p"}}"#)
        XCTAssertEqual(erased.status, 200)
        XCTAssertNotNil(erased.headers["ratelimit"])
        XCTAssertEqual(try daemon.request("POST", "/v1/subjects/erasure", key: admin, json: #"{"subject":{"account":"q"}}"#).status, 429)
    }

    func testASkippingCallerIsThrottledWithAnExplanationWhileAReporterIsNot() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock) {
            $0.consumptionGrace = 60
            $0.overdueAllowanceMinimum = 5
        }
        let reporter = try daemon.createCaller(roles: [.evaluate], name: "reporter", rate: 5, burst: 10)
        let skipper = try daemon.createCaller(roles: [.evaluate], name: "skipper", rate: 5, burst: 10)
        let admin = try daemon.createCaller(roles: [.admin]).key
        func evaluate(_ key: String) throws -> TestDaemon.Response {
            try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body)
        }
        var skipped: [String] = []
        for _ in 0..<10 {
            let r = try evaluate(reporter.key)
            XCTAssertEqual(r.status, 200)
            XCTAssertNotNil(r.headers["ratelimit"])
            XCTAssertEqual(r.headers["ratelimit-policy"], #""caller";q=10;w=2"#)
            let eventId = try XCTUnwrap(r.json?["eventId"]?.stringValue)
            XCTAssertEqual(
                try daemon.request(
                    "POST", "/v1/evaluations/\(eventId)/consumption", key: reporter.key,
                    json: #"{"status":"usedUnchangedFriction"}"#
                ).status, 204)
            skipped.append(try XCTUnwrap(try evaluate(skipper.key).json?["eventId"]?.stringValue))
        }
        // Burst used up: the plain caller-rate 429, with its headers.
        let overBurst = try evaluate(skipper.key)
        XCTAssertEqual(overBurst.status, 429)
        XCTAssertEqual(overBurst.object?["reason"]?.stringValue, "callerRate")
        XCTAssertNotNil(overBurst.headers["retry-after"])
        XCTAssertNotNil(overBurst.headers["ratelimit-policy"])
        XCTAssertEqual(overBurst.headers["ratelimit"].map { $0.hasPrefix(#""caller";r=0;"#) }, true)

        // The skipper's ten reports fall due; the counts are read from the store.
        clock.advance(seconds: 61)
        daemon.service.refreshCompliance()
        for i in 0..<10 { XCTAssertEqual(try evaluate(reporter.key).status, 200, "reporter request \(i)") }
        // 10 overdue, allowance 5: penalty step 1, half the rate and burst.
        for i in 0..<5 { XCTAssertEqual(try evaluate(skipper.key).status, 200, "skipper request \(i)") }
        let throttled = try evaluate(skipper.key)
        XCTAssertEqual(throttled.status, 429)
        XCTAssertEqual(throttled.code, "rateLimitExceeded")
        XCTAssertEqual(throttled.object?["reason"]?.stringValue, "reportingPenalty")
        XCTAssertEqual(throttled.object?["overdueReports"]?.numberValue, 10)
        XCTAssertEqual(throttled.object?["overdueAllowance"]?.numberValue, 5)
        XCTAssertEqual(throttled.object?["effectiveRate"]?.numberValue, 2.5)
        let detail = try XCTUnwrap(throttled.string("detail"))
        XCTAssertTrue(detail.contains("10 of your"), detail)
        XCTAssertTrue(detail.contains("consumption"), detail)
        XCTAssertEqual(throttled.headers["ratelimit-policy"], #""caller";q=5;w=2"#)

        // The admin view tells the same story.
        var view = try daemon.request("GET", "/admin/v1/callers/\(skipper.callerId)/rate-limit", key: admin).json
        XCTAssertEqual(view?["penalty"]?["step"]?.numberValue, 1)
        XCTAssertEqual(view?["window"]?["overdue"]?.numberValue, 10)
        XCTAssertEqual(view?["window"]?["evaluations"]?.numberValue, 10)
        XCTAssertEqual(view?["throttled"]?["count"]?.numberValue, 2)
        XCTAssertEqual(view?["throttled"]?["lastReason"]?.stringValue, "reportingPenalty")
        XCTAssertEqual(view?["effectiveRate"]?.numberValue, 2.5)
        let reporterView = try daemon.request("GET", "/admin/v1/callers/\(reporter.callerId)/rate-limit", key: admin).json
        XCTAssertEqual(reporterView?["window"]?["onTime"]?.numberValue, 10)
        XCTAssertEqual(reporterView?["throttled"]?["count"]?.numberValue, 0)

        // A late report counts as late, not missing.
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/evaluations/\(skipped[0])/consumption", key: skipper.key,
                json: #"{"status":"notUsedNotNeeded"}"#
            ).status, 204)
        daemon.service.refreshCompliance()
        view = try daemon.request("GET", "/admin/v1/callers/\(skipper.callerId)/rate-limit", key: admin).json
        XCTAssertEqual(view?["window"]?["late"]?.numberValue, 1)
        XCTAssertEqual(view?["window"]?["overdue"]?.numberValue, 9)

        // The penalty survives a restart: overdue counts come from the store.
        try daemon.restart()
        view = try daemon.request("GET", "/admin/v1/callers/\(skipper.callerId)/rate-limit", key: admin).json
        XCTAssertEqual(view?["penalty"]?["step"]?.numberValue, 1)
        XCTAssertEqual(view?["window"]?["overdue"]?.numberValue, 9)

        // An admin reset forgives what was overdue, durably.
        let reset = try daemon.request("POST", "/admin/v1/callers/\(skipper.callerId)/rate-limit/reset", key: admin)
        XCTAssertEqual(reset.status, 200)
        XCTAssertEqual(reset.json?["penalty"]?["step"]?.numberValue, 0)
        XCTAssertEqual(reset.json?["throttled"]?["count"]?.numberValue, 0)
        clock.advance(ms: 1)
        daemon.service.refreshCompliance()
        view = try daemon.request("GET", "/admin/v1/callers/\(skipper.callerId)/rate-limit", key: admin).json
        XCTAssertEqual(view?["window"]?["overdue"]?.numberValue, 0)
        XCTAssertEqual(view?["penalty"]?["step"]?.numberValue, 0)
    }

    /// Issue 45: looping resets let a 0.01/s, burst-3 caller make 90 evaluations in 3.1 s. A reset
    /// gives back no token: over 40 rounds of an evaluation and a reset, 40 s on the clock, the
    /// caller gets its burst and what its rate earned (3 + 0.01 x 40 = 3.4: 3), and the resets
    /// themselves cost the admin a token each, refused with 429 and Retry-After past its burst.
    func testLoopingResetsAdmitNoMoreThanBurstAndRate() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock)
        let caller = try daemon.createCaller(roles: [.evaluate], rate: 0.01, burst: 3)
        let admin = try daemon.createCaller(roles: [.admin], rate: 1, burst: 100).key
        let start = clock.now()
        var admitted = 0
        for round in 0..<40 {
            let r = try daemon.request("POST", "/v1/evaluations", key: caller.key, json: Self.body)
            XCTAssertTrue([200, 429].contains(r.status), "round \(round): \(r.status)")
            if r.status == 200 { admitted += 1 }
            let reset = try daemon.request("POST", "/admin/v1/callers/\(caller.callerId)/rate-limit/reset", key: admin)
            XCTAssertEqual(reset.status, 200, "round \(round)")
            XCTAssertEqual(reset.json?["throttled"]?["count"]?.numberValue, 0)
            clock.advance(ms: 1_000)
        }
        let elapsed = Double(clock.now() - start) / 1000
        XCTAssertEqual(admitted, 3 + Int(0.01 * elapsed), "admitted \(admitted) in \(elapsed) s with a reset after each request")

        let thrifty = try daemon.createCaller(roles: [.admin], rate: 0.001, burst: 2).key
        for _ in 0..<2 {
            let r = try daemon.request("POST", "/admin/v1/callers/\(caller.callerId)/rate-limit/reset", key: thrifty)
            XCTAssertEqual(r.status, 200)
            XCTAssertNotNil(r.headers["ratelimit"], "a reset answers with the admin's quota")
        }
        let refused = try daemon.request("POST", "/admin/v1/callers/\(caller.callerId)/rate-limit/reset", key: thrifty)
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.object?["code"]?.stringValue, "rateLimitExceeded")
        XCTAssertNotNil(refused.headers["retry-after"])
    }

    func testPatchChangesTheRateWithoutARestart() throws {
        let daemon = try TestDaemon(.inProcess)
        let caller = try daemon.createCaller(roles: [.evaluate], rate: 1, burst: 1)
        let admin = try daemon.createCaller(roles: [.admin]).key
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: caller.key, json: Self.body).status, 200)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: caller.key, json: Self.body).status, 429)
        let patched = try daemon.request("PATCH", "/admin/v1/callers/\(caller.callerId)", key: admin, json: #"{"burst":50}"#)
        XCTAssertEqual(patched.status, 200)
        XCTAssertEqual(patched.json?["burst"]?.numberValue, 50)
        XCTAssertEqual(patched.json?["rate"]?.numberValue, 1)
        // The daemon's credential cache is off in tests: the next request sees the new burst.
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: caller.key, json: Self.body).status, 200)
        let list = try daemon.request("GET", "/admin/v1/callers", key: admin)
        XCTAssertEqual(list.json?["callers"]?.arrayValue?.count, 2)
    }

    func testDeviceLimitAnswers429WithItsOwnPolicy() throws {
        let daemon = try TestDaemon(.inProcess) { $0.devicePerHour = 2 }
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let body =
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"device":"d-1"}}"#
        for _ in 0..<2 { XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: body).status, 200) }
        let r = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
        XCTAssertEqual(r.status, 429)
        XCTAssertEqual(r.object?["reason"]?.stringValue, "deviceRate")
        XCTAssertEqual(r.headers["ratelimit-policy"], #""device";q=2;w=3600"#)
        XCTAssertEqual(r.headers["retry-after"], "1800")
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/evaluations", key: key,
                json: body.replacingOccurrences(of: "d-1", with: "d-2")
            ).status, 200)
    }

    func testInsightQuotaFailsOnlyThatInsight() throws {
        let daemon = try TestDaemon(.inProcess) {
            $0.insightQuotaPercent = 100
            $0.modelsDirectory = TestDaemon.committedModels
        }
        let key = try daemon.createCaller(roles: [.evaluate], rate: 1, burst: 2).key
        let two =
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1},{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"1.0"},{"type":"isLikelyBeingPhished","schemaVersion":1}]}"#
        let first = try daemon.request("POST", "/v1/evaluations", key: key, json: two)
        XCTAssertNotNil(first.json?["insights"]?[1]?["outcome"]?["value"])
        let second = try daemon.request("POST", "/v1/evaluations", key: key, json: two)
        XCTAssertEqual(second.status, 200)
        XCTAssertEqual(second.json?["insights"]?[0]?["outcome"]?["error"]?["code"]?.stringValue, "rateLimitError")
        XCTAssertEqual(second.json?["insights"]?[2]?["outcome"]?["error"]?["code"]?.stringValue, "insightUnavailable")
    }
}
