import Telemetry
import XCTest

/// Golden exposition text for each metric type, escaping, number spelling and ordering.
final class ExpositionTests: XCTestCase {
    func testCounterExposition() {
        let registry = MetricsRegistry()
        let labels = registry.counter(
            "insightd_labels_total", help: "Fraud labels received.",
            labels: ["outcome", "result"])
        labels.increment("notFraud", "duplicate")
        labels.increment("confirmedFraud", "stored")
        labels.labels("confirmedFraud", "stored").increment(by: 2)
        registry.counter("insightd_fractions_total", help: "Fractional increments.").increment(by: 0.25)
        XCTAssertEqual(
            registry.render(),
            """
            # HELP insightd_fractions_total Fractional increments.
            # TYPE insightd_fractions_total counter
            insightd_fractions_total 0.25
            # HELP insightd_labels_total Fraud labels received.
            # TYPE insightd_labels_total counter
            insightd_labels_total{outcome="confirmedFraud",result="stored"} 3
            insightd_labels_total{outcome="notFraud",result="duplicate"} 1

            """)
    }

    func testGaugeExposition() {
        let registry = MetricsRegistry()
        let overdue = registry.gauge(
            "insightd_consumption_overdue", help: "Evaluations past their report deadline.",
            labels: ["environment"])
        overdue.set("production", to: 12)
        overdue.add("sandbox", by: 3)
        overdue.labels("sandbox").decrement()
        let open = registry.gauge("insightd_open_connections", help: "Open client connections.")
        open.labels().increment(by: 5)
        open.labels().decrement(by: 6)
        let special = registry.gauge("t_special", help: "Special values.", labels: ["case"])
        special.set("nan", to: .nan)
        special.set("pinf", to: .infinity)
        special.set("ninf", to: -.infinity)
        special.set("tiny", to: 0.00001)
        special.set("big", to: 1.5e20)
        special.set("negzero", to: -0.0)
        special.set("fraction", to: -2.5)
        XCTAssertEqual(
            registry.render(),
            """
            # HELP insightd_consumption_overdue Evaluations past their report deadline.
            # TYPE insightd_consumption_overdue gauge
            insightd_consumption_overdue{environment="production"} 12
            insightd_consumption_overdue{environment="sandbox"} 2
            # HELP insightd_open_connections Open client connections.
            # TYPE insightd_open_connections gauge
            insightd_open_connections -1
            # HELP t_special Special values.
            # TYPE t_special gauge
            t_special{case="big"} 1.5e+20
            t_special{case="fraction"} -2.5
            t_special{case="nan"} NaN
            t_special{case="negzero"} 0
            t_special{case="ninf"} -Inf
            t_special{case="pinf"} +Inf
            t_special{case="tiny"} 1e-05

            """)
    }

    func testHistogramExpositionIsCumulative() {
        let registry = MetricsRegistry()
        let duration = registry.histogram(
            "insightd_http_request_duration_seconds", help: "Request duration.",
            labels: ["route", "method", "status"], buckets: [0.005, 0.01, 0.1, 1])
        let evaluate = duration.labels("/v1/evaluations", "POST", "200")
        for value in [0.001, 0.005, 0.007, 0.05, 0.05, 0.5, 3] { evaluate.observe(value) }
        duration.observe("/livez", "GET", "200", value: 0.0001)
        let batch = registry.histogram(
            "insightd_store_commit_batch_size", help: "Writes per commit.",
            buckets: [1, 2, 4, .infinity])
        batch.observe(value: 3)
        XCTAssertEqual(
            registry.render(),
            """
            # HELP insightd_http_request_duration_seconds Request duration.
            # TYPE insightd_http_request_duration_seconds histogram
            insightd_http_request_duration_seconds_bucket{route="/livez",method="GET",status="200",le="0.005"} 1
            insightd_http_request_duration_seconds_bucket{route="/livez",method="GET",status="200",le="0.01"} 1
            insightd_http_request_duration_seconds_bucket{route="/livez",method="GET",status="200",le="0.1"} 1
            insightd_http_request_duration_seconds_bucket{route="/livez",method="GET",status="200",le="1"} 1
            insightd_http_request_duration_seconds_bucket{route="/livez",method="GET",status="200",le="+Inf"} 1
            insightd_http_request_duration_seconds_sum{route="/livez",method="GET",status="200"} 0.0001
            insightd_http_request_duration_seconds_count{route="/livez",method="GET",status="200"} 1
            insightd_http_request_duration_seconds_bucket{route="/v1/evaluations",method="POST",status="200",le="0.005"} 2
            insightd_http_request_duration_seconds_bucket{route="/v1/evaluations",method="POST",status="200",le="0.01"} 3
            insightd_http_request_duration_seconds_bucket{route="/v1/evaluations",method="POST",status="200",le="0.1"} 5
            insightd_http_request_duration_seconds_bucket{route="/v1/evaluations",method="POST",status="200",le="1"} 6
            insightd_http_request_duration_seconds_bucket{route="/v1/evaluations",method="POST",status="200",le="+Inf"} 7
            insightd_http_request_duration_seconds_sum{route="/v1/evaluations",method="POST",status="200"} 3.613
            insightd_http_request_duration_seconds_count{route="/v1/evaluations",method="POST",status="200"} 7
            # HELP insightd_store_commit_batch_size Writes per commit.
            # TYPE insightd_store_commit_batch_size histogram
            insightd_store_commit_batch_size_bucket{le="1"} 0
            insightd_store_commit_batch_size_bucket{le="2"} 0
            insightd_store_commit_batch_size_bucket{le="4"} 1
            insightd_store_commit_batch_size_bucket{le="+Inf"} 1
            insightd_store_commit_batch_size_sum 3
            insightd_store_commit_batch_size_count 1

            """)
    }

    func testHistogramBoundariesAndDurations() {
        let histogram = MetricsRegistry().histogram("t_seconds", help: "", buckets: [1, 2]).labels()
        histogram.observe(1)  // le is "less or equal": 1 belongs to the first bucket
        histogram.observe(.milliseconds(1500))
        histogram.observe(.nan)  // counted in +Inf only
        let snapshot = histogram.snapshot()
        XCTAssertEqual(snapshot.cumulativeCounts, [1, 2, 3])
        XCTAssertTrue(snapshot.sum.isNaN)
        XCTAssertEqual(histogram.count, 3)
    }

    func testCallbackCollector() {
        let registry = MetricsRegistry()
        registry.collect("insightd_write_queue_depth", help: "Writes waiting for commit.", type: .gauge) {
            [([], 42)]
        }
        registry.collect(
            "insightd_build_info", help: "Build information; the value is 1.", type: .gauge,
            labels: ["version"]
        ) { [(["1.2.0"], 1)] }
        registry.collect(
            "t_reads_total", help: "Summed duplicates; a wrong arity is dropped.", type: .counter,
            labels: ["kind"]
        ) {
            [(["b"], 1), (["a"], 2), (["b"], 3), (["a", "extra"], 100)]
        }
        XCTAssertEqual(
            registry.render(),
            """
            # HELP insightd_build_info Build information; the value is 1.
            # TYPE insightd_build_info gauge
            insightd_build_info{version="1.2.0"} 1
            # HELP insightd_write_queue_depth Writes waiting for commit.
            # TYPE insightd_write_queue_depth gauge
            insightd_write_queue_depth 42
            # HELP t_reads_total Summed duplicates; a wrong arity is dropped.
            # TYPE t_reads_total counter
            t_reads_total{kind="a"} 2
            t_reads_total{kind="b"} 4

            """)
        // Registering again replaces the callback.
        registry.collect("insightd_write_queue_depth", help: "Writes waiting for commit.", type: .gauge) { [([], 7)] }
        XCTAssertTrue(registry.render().contains("\ninsightd_write_queue_depth 7\n"))
    }

    func testEscapesLabelValuesAndHelp() {
        let registry = MetricsRegistry()
        registry.counter("t_escapes_total", help: "Backslash \\ and\nnewline; \"quotes\" stay.", labels: ["value"])
            .increment("a\\b \"quoted\"\nnext line é 😀")
        XCTAssertEqual(
            registry.render(),
            #"""
            # HELP t_escapes_total Backslash \\ and\nnewline; "quotes" stay.
            # TYPE t_escapes_total counter
            t_escapes_total{value="a\\b \"quoted\"\nnext line é 😀"} 1

            """#)
        let parsed = try? ExpositionParser.parse(registry.render())
        XCTAssertEqual(
            parsed?.families["t_escapes_total"]?.samples.first?.labels["value"],
            "a\\b \"quoted\"\nnext line é 😀")
        XCTAssertEqual(parsed?.families["t_escapes_total"]?.help, "Backslash \\ and\nnewline; \"quotes\" stay.")
    }

    func testFamiliesWithoutSamplesHaveHeadersOnly() {
        let registry = MetricsRegistry()
        _ = registry.counter("insightd_insight_errors_total", help: "", labels: ["code"])
        XCTAssertEqual(
            registry.render(),
            """
            # HELP insightd_insight_errors_total
            # TYPE insightd_insight_errors_total counter

            """)
        XCTAssertEqual(MetricsRegistry().render(), "")
    }

    func testRegistrationIsIdempotent() {
        let registry = MetricsRegistry()
        let first = registry.counter("t_total", help: "x", labels: ["a"])
        let second = registry.counter("t_total", help: "another help is ignored", labels: ["a"])
        XCTAssertTrue(first === second)
        second.increment("v")
        XCTAssertEqual(first.labels("v").value, 1)
        XCTAssertTrue(first.labels("v") === second.labels("v"))
        let histogram = registry.histogram("t_seconds", help: "", buckets: [1, 2])
        XCTAssertTrue(histogram === registry.histogram("t_seconds", help: "", buckets: [1, 2, .infinity]))
        XCTAssertTrue(registry.gauge("t_gauge", help: "") === registry.gauge("t_gauge", help: ""))
    }

    func testSeriesAreSortedByLabelValues() {
        let registry = MetricsRegistry()
        let family = registry.counter("t_total", help: "", labels: ["b", "a"])
        for values in [["z", "1"], ["a", "2"], ["a", "10"], ["m", "0"]] {
            family.labels(values: values).increment()
        }
        let lines = registry.render().split(separator: "\n").filter { !$0.hasPrefix("#") }
        XCTAssertEqual(
            lines,
            [
                #"t_total{b="a",a="10"} 1"#, #"t_total{b="a",a="2"} 1"#,
                #"t_total{b="m",a="0"} 1"#, #"t_total{b="z",a="1"} 1"#
            ])
    }

    func testBucketHelpers() {
        XCTAssertEqual(Buckets.exponential(start: 1, factor: 2, count: 4), [1, 2, 4, 8])
        XCTAssertEqual(Buckets.linear(start: 0.5, width: 0.5, count: 3), [0.5, 1, 1.5])
        XCTAssertEqual(Buckets.powersOfTwo.last, 1024)
    }
}
