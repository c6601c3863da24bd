import Telemetry
import XCTest

/// The registry's output passes a strict parser of the text format, including every metric
/// insightd registers; and the parser itself rejects malformed text.
final class WellFormedTests: XCTestCase {
    /// The metrics insightd exposes (see docs/deployment.md), registered and exercised.
    private func insightdRegistry() -> MetricsRegistry {
        let registry = MetricsRegistry()
        let requests = registry.histogram(
            "insightd_http_request_duration_seconds", help: "HTTP request duration from first byte to response.",
            labels: ["route", "method", "status"], buckets: Buckets.requestDuration)
        requests.observe("/v1/evaluations", "POST", "200", value: 0.0042)
        requests.observe("/v1/evaluations", "POST", "400", value: 0.0003)
        requests.observe("/readyz", "GET", "503", value: 0.00002)
        registry.counter(
            "insightd_evaluations_total", help: "Insights evaluated, by value.",
            labels: ["category", "environment", "model_version", "value"]
        )
        .increment("payment", "production", "2027.01.0", "high")
        registry.counter(
            "insightd_insight_errors_total", help: "Insights answered with an error, by code.",
            labels: ["code"]
        ).increment("insightUnavailable")
        registry.counter(
            "insightd_consumption_reports_total", help: "Consumption reports, by status and timeliness.",
            labels: ["status", "timeliness"]
        ).increment("usedIncreasedFriction", "onTime")
        registry.gauge(
            "insightd_consumption_overdue", help: "Evaluations whose consumption report is overdue.",
            labels: ["environment"]
        ).set("production", to: 3)
        registry.counter(
            "insightd_throttled_requests_total", help: "Requests refused by throttling, by reason.",
            labels: ["reason"]
        ).increment("rateLimit")
        registry.counter(
            "insightd_labels_total", help: "Fraud labels received, by outcome and result.",
            labels: ["outcome", "result"]
        ).increment("confirmedFraud", "stored", by: 20)
        registry.histogram(
            "insightd_store_commit_duration_seconds", help: "Duration of a group commit (fsync included).",
            buckets: Buckets.commitDuration
        ).observe(value: 0.0017)
        registry.histogram(
            "insightd_store_commit_batch_size", help: "Writes committed in one transaction.",
            buckets: Buckets.powersOfTwo
        ).observe(value: 37)
        registry.collect(
            "insightd_write_queue_depth", help: "Writes waiting for the writer thread.",
            type: .gauge
        ) { [([], 12)] }
        registry.collect(
            "insightd_build_info", help: "Build information; the value is always 1.",
            type: .gauge, labels: ["version"]
        ) { [(["0.1.0"], 1)] }
        registry.collect("insightd_open_connections", help: "Open client connections.", type: .gauge) { [([], 4)] }
        registry.collect(
            "insightd_connections_evicted_total",
            help:
                "Connections closed to make room for a new one (at the connection limit or its address's cap): idle, or receiving a request (incomplete).",
            type: .counter, labels: ["reason"]
        ) { [(["idle"], 37), (["incomplete"], 5)] }
        registry.collect(
            "insightd_connections_rejected_total",
            help: "New connections closed at once: every open one busy (limit), or every one of their address's, at its cap (address).",
            type: .counter, labels: ["reason"]
        ) { [(["address"], 2), (["limit"], 0)] }
        ProcessMetrics.register(on: registry)
        return registry
    }

    func testInsightdMetricsAreWellFormed() throws {
        let text = insightdRegistry().render()
        let parsed = try ExpositionParser.parse(text)
        XCTAssertEqual(parsed.order, parsed.order.sorted(), "families sorted by name")
        let types = parsed.families.mapValues(\.type)
        XCTAssertEqual(types["insightd_http_request_duration_seconds"], "histogram")
        XCTAssertEqual(types["insightd_evaluations_total"], "counter")
        XCTAssertEqual(types["insightd_consumption_overdue"], "gauge")
        XCTAssertEqual(types["insightd_store_commit_batch_size"], "histogram")
        XCTAssertEqual(types["process_cpu_seconds_total"], "counter")
        XCTAssertEqual(parsed.order.filter { $0.hasPrefix("insightd_") }.count, 14)
        let buckets = parsed.families["insightd_http_request_duration_seconds"]!.samples.filter {
            $0.name.hasSuffix("_bucket") && $0.labels["status"] == "200"
        }
        XCTAssertEqual(buckets.count, Buckets.requestDuration.count + 1)
        XCTAssertEqual(buckets.first { $0.labels["le"] == "0.005" }?.value, 1)
        XCTAssertEqual(buckets.first { $0.labels["le"] == "0.0025" }?.value, 0)
    }

    func testAwkwardValuesStayWellFormed() throws {
        let registry = MetricsRegistry()
        let gauge = registry.gauge("t_values", help: "back\\slash\nnew line", labels: ["v"])
        for (index, value) in [
            Double.nan, .infinity, -.infinity, 0, -0.0, 1e-300, Double.leastNonzeroMagnitude, 1e300,
            .greatestFiniteMagnitude, 0x1p53 + 2, -123.456
        ].enumerated() {
            gauge.set("\(index)\"\\\n}", to: value)
        }
        let histogram = registry.histogram("t_awkward", help: "", labels: ["x"], buckets: [1e-9, 0.1, 1e9])
        for value in [Double.nan, -.infinity, .infinity, -1, 0, 1e-10, 1e10] {
            histogram.observe("{,}", value: value)
        }
        // A value starting with a combining mark: with the quote before it, one Character.
        registry.counter("t_marks_total", help: "\u{301}", labels: ["v"]).increment("\u{301}x\u{301}")
        let parsed = try ExpositionParser.parse(registry.render())
        XCTAssertEqual(parsed.families["t_marks_total"]?.samples.first?.labels["v"], "\u{301}x\u{301}")
        let values = parsed.families["t_values"]!.samples.map(\.value)
        XCTAssertEqual(values.count, 11)
        XCTAssertTrue(
            values.contains(Double.leastNonzeroMagnitude) && values.contains(.greatestFiniteMagnitude) && values.contains(0x1p53 + 2))
    }

    func testParserRejectsMalformedText() {
        let valid = "# TYPE a counter\na_total 1\n"
        XCTAssertNoThrow(try ExpositionParser.parse(valid))
        let cases: [(String, String)] = [
            ("a 1", "line feed"),
            ("a 1\r\n", "carriage return"),
            ("a-b 1\n", "invalid metric name"),
            ("a{1x=\"v\"} 1\n", "invalid label name"),
            ("a{__x=\"v\"} 1\n", "invalid label name"),
            ("a{x=\"v} 1\n", "unterminated"),
            ("a{x=\"\\t\"} 1\n", "invalid escape"),
            ("a{x=\"v\",x=\"w\"} 1\n", "duplicate label"),
            ("a{x=v} 1\n", "expected =\""),
            ("a 1,5\n", "invalid value"),
            ("a Inf\n", "invalid value"),
            ("a nan\n", "invalid value"),
            ("a 1 2 3\n", "expected value"),
            ("a 1\na 2\n", "duplicate series"),
            ("a 1\nb 1\na{x=\"y\"} 1\n", "not contiguous"),
            ("a 1\n# TYPE a gauge\n", "TYPE of a after its samples"),
            ("# TYPE a gauge\n# TYPE a gauge\n", "second TYPE"),
            ("# HELP a x\n# HELP a y\n", "second HELP"),
            ("# HELP a bad \\q escape\n", "invalid escape"),
            ("# TYPE a summarie\n", "invalid TYPE"),
            ("# TYPE c_total counter\nc_total -1\n", "negative"),
            ("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", "no +Inf bucket"),
            (
                "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
                "not cumulative"
            ),
            (
                "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
                "le not increasing"
            ),
            ("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n", "differs from _count"),
            ("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n", "needs _bucket, _sum and _count"),
            ("# TYPE h histogram\nh_bucket 1\n", "bucket without a valid le")
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try ExpositionParser.parse(text), text.debugDescription) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(text.debugDescription): \(error)")
            }
        }
    }
}
