import Glibc
import Telemetry
import XCTest

/// Names are validated at registration; invalid ones trap (a programming error), which is
/// checked in a forked child process.
final class ValidationTests: XCTestCase {
    func testMetricNameRules() {
        for valid in ["a", "_a", ":a", "insightd_http_request_duration_seconds", "a:b_c9", "A_Z"] {
            XCTAssertTrue(PrometheusName.isValidMetricName(valid), valid)
        }
        for invalid in ["", "9a", "a-b", "a b", "a.b", "é", "a\n", "a{b}", "a\"b"] {
            XCTAssertFalse(PrometheusName.isValidMetricName(invalid), invalid)
        }
    }

    func testLabelNameRules() {
        for valid in ["a", "_a", "route", "model_version", "a9", "_"] {
            XCTAssertTrue(PrometheusName.isValidLabelName(valid), valid)
        }
        for invalid in ["", "__name__", "__x", "9a", "a:b", "a-b", "a b", "é"] {
            XCTAssertFalse(PrometheusName.isValidLabelName(invalid), invalid)
        }
    }

    func testInvalidRegistrationsTrap() throws {
        let cases: [(String, @Sendable () -> Void)] = [
            ("bad metric name", { _ = MetricsRegistry().gauge("insightd-queue", help: "") }),
            ("counter without _total", { _ = MetricsRegistry().counter("insightd_requests", help: "") }),
            ("reserved label name", { _ = MetricsRegistry().gauge("g", help: "", labels: ["__name__"]) }),
            ("colon in label name", { _ = MetricsRegistry().gauge("g", help: "", labels: ["a:b"]) }),
            ("duplicate label name", { _ = MetricsRegistry().gauge("g", help: "", labels: ["a", "a"]) }),
            ("le on a histogram", { _ = MetricsRegistry().histogram("h", help: "", labels: ["le"], buckets: [1]) }),
            ("unsorted buckets", { _ = MetricsRegistry().histogram("h", help: "", buckets: [2, 1]) }),
            ("NaN bucket", { _ = MetricsRegistry().histogram("h", help: "", buckets: [.nan]) }),
            ("no bucket", { _ = MetricsRegistry().histogram("h", help: "", buckets: [.infinity]) }),
            (
                "type conflict",
                {
                    let registry = MetricsRegistry()
                    _ = registry.counter("c_total", help: "")
                    _ = registry.gauge("c_total", help: "")
                }
            ),
            (
                "label conflict",
                {
                    let registry = MetricsRegistry()
                    _ = registry.gauge("g", help: "", labels: ["a"])
                    _ = registry.gauge("g", help: "", labels: ["b"])
                }
            ),
            (
                "sample name clash",
                {
                    let registry = MetricsRegistry()
                    _ = registry.histogram("h", help: "", buckets: [1])
                    _ = registry.gauge("h_count", help: "")
                }
            ),
            ("histogram collector", { MetricsRegistry().collect("h", help: "", type: .histogram) { [] } }),
            ("wrong label count", { MetricsRegistry().counter("c_total", help: "", labels: ["a"]).increment() }),
            ("negative increment", { MetricsRegistry().counter("c_total", help: "").increment(by: -1) }),
            ("NaN increment", { MetricsRegistry().counter("c_total", help: "").increment(by: .nan) })
        ]
        for (name, body) in cases {
            XCTAssertEqual(try exitSignal(of: body), true, name)
        }
        // The harness itself: a body that does not trap exits normally.
        XCTAssertEqual(try exitSignal { _ = MetricsRegistry().gauge("fine", help: "") }, false)
    }

    /// Runs `body` in a forked child; true if it trapped (SIGILL or SIGTRAP, which a failed
    /// `precondition` raises), false if it returned.
    ///
    /// The child catches the trap signals itself and exits with status 100 at once: the Swift
    /// runtime's crash handler would otherwise start a backtracer for every expected trap.
    private func exitSignal(of body: () -> Void) throws -> Bool {
        let child = fork()
        if child == 0 {
            let null = open("/dev/null", O_WRONLY)
            dup2(null, STDERR_FILENO)  // keep the expected precondition messages out of the test log
            signal(SIGILL) { _ in _exit(100) }
            signal(SIGTRAP) { _ in _exit(100) }
            body()
            _exit(0)
        }
        XCTAssertGreaterThan(child, 0)
        var status: Int32 = 0
        for _ in 0..<1000 {  // 10 s at most
            if waitpid(child, &status, WNOHANG) == child {
                let exited = status & 0x7f == 0
                let code = (status >> 8) & 0xff
                XCTAssertTrue(exited && (code == 0 || code == 100), "child ended with status \(status)")
                return exited && code == 100
            }
            usleep(10_000)
        }
        kill(child, SIGKILL)
        waitpid(child, &status, 0)
        throw XCTSkip("child did not finish")
    }
}
