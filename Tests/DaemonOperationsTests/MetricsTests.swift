import DaemonTesting
import Foundation
import InsightTesting
import XCTest

/// `/metrics` after a workload: well-formed exposition, the documented families, values that
/// follow the traffic, and no identifier in any label.
final class MetricsTests: XCTestCase {
    /// Durations come from a clock that never steps: with the wall clock standing still (and then
    /// stepped back an hour), each request still takes some time and none a negative one.
    func testRequestDurationsDoNotFollowTheWallClock() throws {
        let clock = ManualClock()
        let daemon = try TestDaemon(.inProcess, clock: clock)
        for _ in 0..<3 { XCTAssertEqual(try daemon.request("GET", "/livez").status, 200) }
        clock.advance(ms: -3_600_000)
        for _ in 0..<3 { XCTAssertEqual(try daemon.request("GET", "/livez").status, 200) }
        let samples = try MetricSample.parse(try daemon.scrape())
        let livez = samples.filter { $0.labels["route"] == "/livez" }
        let count = try XCTUnwrap(livez.first { $0.name == "insightd_http_request_duration_seconds_count" }?.value)
        let sum = try XCTUnwrap(livez.first { $0.name == "insightd_http_request_duration_seconds_sum" }?.value)
        XCTAssertEqual(count, 6)
        XCTAssertGreaterThan(sum, 0, "durations read from a wall clock that stood still")
        XCTAssertLessThan(sum, 6, "durations thrown off by the clock's step")
    }

    func testExpositionFollowsTheTrafficAndCarriesNoIdentifier() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        let key = try daemon.createCaller(roles: [.evaluate, .labels]).key
        let account = "acct-METRICS-314159"
        let body =
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1},{"type":"isLikelyBeingPhished","schemaVersion":1}],"subject":{"account":"\#(account)"}}"#
        var eventIds: [String] = []
        for _ in 0..<3 {
            let r = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
            XCTAssertEqual(r.status, 200)
            eventIds.append(try XCTUnwrap(r.json?["eventId"]?.stringValue))
        }
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/evaluations/\(eventIds[0])/consumption", key: key,
                json: #"{"status":"usedUnchangedFriction"}"#
            ).status, 204)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: "{").status, 400)

        let r = try daemon.metricsRequest()
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        let text = String(decoding: r.body, as: UTF8.self)
        let samples = try MetricSample.parse(text)
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { sample in
                sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value }
            }?.value
        }
        XCTAssertEqual(
            value(
                "insightd_evaluations_total",
                [
                    "category": "payment", "environment": "production",
                    "model_version": "2.0", "value": "unknown"
                ]), 3)
        XCTAssertEqual(value("insightd_insight_errors_total", ["code": "insightUnavailable"]), 3)
        XCTAssertEqual(value("insightd_consumption_reports_total", ["status": "usedUnchangedFriction", "timeliness": "onTime"]), 1)
        XCTAssertEqual(
            value(
                "insightd_http_request_duration_seconds_count",
                ["route": "/v1/evaluations", "method": "POST", "status": "200"]), 3)
        XCTAssertEqual(
            value(
                "insightd_http_request_duration_seconds_count",
                ["route": "/v1/evaluations", "method": "POST", "status": "400"]), 1)
        XCTAssertGreaterThanOrEqual(value("insightd_store_commit_batch_size_count") ?? 0, 1)
        XCTAssertNotNil(value("insightd_write_queue_depth"))
        XCTAssertNotNil(value("insightd_subject_index_lag_evaluations"))
        XCTAssertNotNil(value("insightd_open_connections"))
        XCTAssertEqual(value("insightd_build_info"), 1)
        for family in [
            "insightd_throttled_requests_total", "insightd_labels_total", "insightd_consumption_overdue",
            "insightd_store_commit_duration_seconds", "insightd_compliance_recount_seconds"
        ] {
            XCTAssertTrue(text.contains("# TYPE \(family) "), "\(family) is not exported")
        }
        // Labels are closed vocabularies: no identifier, event id or key can appear.
        for needle in [account, eventIds[0], key] { XCTAssertFalse(text.contains(needle), needle) }
        XCTAssertFalse(samples.contains { $0.labels.values.contains { $0.contains(eventIds[1]) } })
    }

    /// The series name tenants and count what each does: the API's port does not serve them to
    /// anyone (no key, or another tenant's admin key); only the metrics listener does, and it
    /// serves nothing else.
    func testTenantSeriesAreServedOnlyOnTheMetricsListener() throws {
        let daemon = try TestDaemon(.live)
        let acme = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        let globexAdmin = try daemon.createCaller(roles: [.admin, .evaluate], tenant: "globex").key
        XCTAssertEqual(
            try daemon.request(
                "PUT", "/v1/authorization", key: acme,
                json: #"{"subject":{"account":"a-1"},"status":"denied"}"#
            ).status, 200)
        for key in [nil, globexAdmin] {
            let r = try daemon.request("GET", "/metrics", key: key)
            XCTAssertEqual(r.status, 404, "/metrics on the API's port")
            XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains("acme"))
        }
        let scraped = try daemon.metricsRequest()
        XCTAssertEqual(scraped.status, 200)
        XCTAssertEqual(scraped.headers["cache-control"], "no-store")
        XCTAssertTrue(String(decoding: scraped.body, as: UTF8.self).contains(#"insightd_denials{tenant="acme""#))
        for path in ["/livez", "/v1/evaluations", "/metrics/", "/"] {
            let r = try daemon.metricsRequest("GET", path)
            XCTAssertEqual(r.status, 404, path)
            XCTAssertEqual(r.code, "notFound", path)
        }
        let post = try daemon.metricsRequest("POST")
        XCTAssertEqual(post.status, 405)
        XCTAssertEqual(post.headers["allow"], "GET, HEAD")
        XCTAssertNotEqual(daemon.service.metricsPort, daemon.port)
    }

    func testInventedMethodsShareOneSeries() throws {
        let daemon = try TestDaemon(.inProcess)
        for i in 0..<20 {
            _ = try daemon.request("M\(i)THOD", "/v1/evaluations")
            _ = try daemon.request("X-\(i)", "/no-such-route")
        }
        XCTAssertEqual(try daemon.request("PATCH", "/v1/evaluations").status, 405)
        let text = try daemon.scrape()
        let methods = Set(
            try MetricSample.parse(text).filter { $0.name == "insightd_http_request_duration_seconds_count" }
                .compactMap { $0.labels["method"] })
        XCTAssertEqual(methods, ["other", "PATCH"], "invented methods must not become label values")
        let other = try MetricSample.parse(text).filter {
            $0.name == "insightd_http_request_duration_seconds_count" && $0.labels["method"] == "other"
        }.reduce(0) { $0 + $1.value }
        XCTAssertEqual(other, 40)
    }

    func testTheReportingRecountRunsPeriodicallyAndReportsItsDuration() throws {
        let daemon = try TestDaemon(.inProcess) { $0.complianceRefresh = 1 }
        let deadline = Date().addingTimeInterval(10)
        // The gauge reads 0 until the first periodic recount (the one at start is not timed).
        var seconds = 0.0
        while seconds == 0, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            let text = try daemon.scrape()
            seconds = try XCTUnwrap(MetricSample.parse(text).first { $0.name == "insightd_compliance_recount_seconds" }).value
        }
        XCTAssertGreaterThan(seconds, 0, "no recount within 10 s at a 1 s interval")
        XCTAssertLessThan(seconds, 1, "an empty store recounts in well under a second")
    }
}
