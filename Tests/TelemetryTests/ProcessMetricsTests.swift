import Glibc
@testable import Telemetry
import XCTest

final class ProcessMetricsTests: XCTestCase {
    func testParsesProcStatWithAwkwardCommandNames() throws {
        // Fields 14/15 utime/stime, 22 starttime, 23 vsize, 24 rss; the name holds ") (" and spaces.
        let line =
            "1234 (a) (b c) S 1 1 1 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 4 0 5000 104857600 2560 "
            + "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
        let stat = try XCTUnwrap(ProcessStat.parse(line, pageSize: 4096, ticksPerSecond: 100))
        XCTAssertEqual(stat.cpuSeconds, 4)
        XCTAssertEqual(stat.startTicks, 5000)
        XCTAssertEqual(stat.virtualBytes, 104_857_600)
        XCTAssertEqual(stat.residentBytes, 2560 * 4096)
        XCTAssertNil(ProcessStat.parse("garbage", pageSize: 4096, ticksPerSecond: 100))
    }

    func testReadsThisProcess() throws {
        let registry = MetricsRegistry()
        ProcessMetrics.register(on: registry)
        let parsed = try ExpositionParser.parse(registry.render())
        func value(_ name: String) -> Double? { parsed.families[name]?.samples.first?.value }
        XCTAssertGreaterThan(value("process_resident_memory_bytes") ?? 0, 1_000_000)
        XCTAssertGreaterThan(value("process_open_fds") ?? 0, 2)
        XCTAssertGreaterThan(value("process_max_fds") ?? 0, 0)
        XCTAssertGreaterThanOrEqual(value("process_cpu_seconds_total") ?? -1, 0)
        let now = Double(time(nil))
        let start = try XCTUnwrap(value("process_start_time_seconds"))
        XCTAssertLessThanOrEqual(start, now + 1)
        XCTAssertGreaterThan(start, now - 3600)
    }
}
