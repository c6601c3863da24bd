@testable import InsightApp
import XCTest

final class ComplianceRecountTests: XCTestCase {
    func testACheapRecountRunsAtTheConfiguredInterval() {
        XCTAssertEqual(ComplianceRecount.delay(interval: 5, lastDuration: 0.002), 5)
        XCTAssertEqual(ComplianceRecount.delay(interval: 5, lastDuration: 0.25), 5)
        XCTAssertEqual(ComplianceRecount.delay(interval: 30, lastDuration: 1), 30)
    }

    func testACostlyRecountWaitsLongEnoughToStayWithinItsBudget() {
        // 3.6 million evaluations in the window take seconds to recount: no more than 5 % of a core.
        XCTAssertEqual(ComplianceRecount.delay(interval: 5, lastDuration: 3.7), 74, accuracy: 1e-9)
        for duration in [0.3, 1.0, 10.0, 60.0] {
            let delay = ComplianceRecount.delay(interval: 5, lastDuration: duration)
            XCTAssertEqual(duration / delay, ComplianceRecount.budget, accuracy: 1e-12)
        }
    }
}
