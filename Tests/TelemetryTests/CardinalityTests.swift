import Telemetry
import XCTest

/// Label values beyond a family's limits land in one `"other"` series: memory stays bounded.
final class CardinalityTests: XCTestCase {
    func testSeriesBeyondTheCapGoToOther() {
        let registry = MetricsRegistry(defaultLimits: SeriesLimits(maxSeries: 3))
        let family = registry.counter("t_total", help: "", labels: ["code", "route"])
        for value in 0..<10 {
            family.increment("c\(value)", "/r")
        }
        family.increment("c1", "/r")  // existing series still update
        family.increment("other", "other")  // the overflow tuple itself is the overflow series
        XCTAssertEqual(
            registry.render(),
            """
            # HELP t_total
            # TYPE t_total counter
            t_total{code="c0",route="/r"} 1
            t_total{code="c1",route="/r"} 2
            t_total{code="c2",route="/r"} 1
            t_total{code="other",route="other"} 8

            """)
        XCTAssertTrue(family.labels("c9", "/r") === family.labels("other", "other"))
    }

    func testOverLongLabelValuesGoToOther() {
        let registry = MetricsRegistry()
        let family = registry.gauge(
            "t_gauge", help: "", labels: ["v"],
            limits: SeriesLimits(maxSeries: 10, maxLabelValueBytes: 8))
        family.set("12345678", to: 1)
        family.set("123456789", to: 2)
        let samples = try? ExpositionParser.parse(registry.render()).families["t_gauge"]?.samples
        XCTAssertEqual(samples?.map(\.labels), [["v": "12345678"], ["v": "other"]])
    }

    func testMemoryStaysBoundedUnderHostileLabelValues() {
        let registry = MetricsRegistry()
        let family = registry.counter("t_total", help: "", labels: ["route"])
        for value in 0..<50_000 {
            family.increment("/v1/evaluations/\(value)")
        }
        let samples = (try? ExpositionParser.parse(registry.render()).families["t_total"]?.samples) ?? []
        XCTAssertEqual(samples.count, SeriesLimits.default.maxSeries + 1)
        XCTAssertEqual(samples.last?.labels["route"], "other")
        XCTAssertEqual(samples.last?.value, Double(50_000 - SeriesLimits.default.maxSeries))
    }

    func testCollectorsAreCappedToo() {
        let registry = MetricsRegistry()
        registry.collect("t_depth", help: "", type: .gauge, labels: ["queue"], limits: SeriesLimits(maxSeries: 2)) {
            (0..<5).map { ([String($0)], 1) }
        }
        let samples = try? ExpositionParser.parse(registry.render()).families["t_depth"]?.samples
        XCTAssertEqual(samples?.map { $0.labels["queue"]! }, ["0", "1", "other"])
        XCTAssertEqual(samples?.last?.value, 3)
    }
}
