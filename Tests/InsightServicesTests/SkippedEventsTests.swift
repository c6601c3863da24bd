import InsightDomain
import InsightServices
import XCTest

/// Events of types this version does not know are counted once their evaluation is stored, by
/// the capture kit's platform (`unknown` without a source).
final class SkippedEventsTests: XCTestCase {
    func testSkippedEventsAreCountedByPlatform() throws {
        let f = Fixture()
        let caller = f.caller()
        var request = Fixture.request(account: "acct-1")
        request.skippedEvents = 2
        _ = try f.evaluate(request, by: caller)
        request.source = InteractionSource(kit: "web-kit", version: "2.1.0", platform: .web)
        request.skippedEvents = 3
        _ = try f.evaluate(request, by: caller)
        request.skippedEvents = 0
        _ = try f.evaluate(request, by: caller)
        XCTAssertEqual(f.counter("insightd_interaction_skipped_events_total", ["platform": "unknown"]), 2)
        XCTAssertEqual(f.counter("insightd_interaction_skipped_events_total", ["platform": "web"]), 3)
        // Nothing is counted for a request refused before it is stored.
        f.store.failWrites(.unavailable("down"))
        request.skippedEvents = 5
        XCTAssertThrowsError(try f.evaluate(request, by: caller))
        XCTAssertEqual(f.counter("insightd_interaction_skipped_events_total"), 5)
    }
}
