@testable import InsightAPI
import XCTest

/// Request log lines join a caller's trace when it sends a well-formed `traceparent`, and get a
/// fresh random trace id otherwise.
final class TraceContextTests: XCTestCase {
    private func isTraceId(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    func testAWellFormedTraceparentKeepsItsTraceId() {
        XCTAssertEqual(
            TraceContext.traceId("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            "4bf92f3577b34da6a3ce929d0e0e4736")
    }

    func testAnythingElseGetsAFreshRandomTraceId() {
        let malformed: [String?] = [
            nil, "", "garbage", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff is invalid
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // the all-zero trace id is invalid
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"  // 31 digits
        ]
        var seen = Set<String>()
        for header in malformed {
            let id = TraceContext.traceId(header)
            XCTAssertTrue(isTraceId(id), "\(String(describing: header)) -> \(id)")
            XCTAssertNotEqual(id, "4bf92f3577b34da6a3ce929d0e0e4736")
            seen.insert(id)
        }
        // Fresh ids across the pool's refills (4 KiB, 16 bytes an id): all different.
        for _ in 0..<1_000 { seen.insert(TraceContext.traceId(nil)) }
        XCTAssertEqual(seen.count, malformed.count + 1_000)
    }
}
