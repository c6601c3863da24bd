import Dispatch
import InsightDomain
import InsightServices
import InsightStoreFakes
import InsightTesting
import Synchronization
import XCTest

/// Model-performance reports are shared fairly between tenants (issue 45: they ran one at a time
/// per instance, so one tenant's admin delayed another's from 0.3 s to 1.1 s). Order is counted,
/// not timed: a tenant's queries are held until the test lets them go.
final class ModelPerformanceFairnessTests: XCTestCase {
    /// The in-memory store's counts, each query of a held tenant waiting until the test releases
    /// one, and the tenants in the order their queries began.
    final class HeldSource: ModelPerformanceSource {
        let inner = InMemoryStore()
        let held: Set<String>
        let release = DispatchSemaphore(value: 0)
        let began = Mutex<[String]>([])

        init(holding held: Set<String>) { self.held = held }

        func modelPerformanceCounts(_ query: ModelPerformanceQuery) throws -> [ModelPerformanceCell] {
            began.withLock { $0.append(query.tenant) }
            if held.contains(query.tenant) { release.wait() }
            return try inner.modelPerformanceCounts(query)
        }
    }

    static func admin(_ tenant: String) -> Caller {
        Caller(
            callerId: "admin-\(tenant)", name: "admin", tenant: tenant, environment: .production, roles: [.admin], rate: 1, burst: 1,
            createdAt: 0)
    }

    static let period = ModelPerformanceService.Period(environment: .production, from: "2026-12-01", to: "2026-12-07", category: nil)

    /// Asks for a report of `tenant`, fulfilling `done` when it completes.
    func report(_ service: ModelPerformanceService, _ tenant: String, _ done: XCTestExpectation) throws {
        try service.report(Self.period, of: Self.admin(tenant), resume: { $0() }) { result in
            if case .failure(let rejection) = result { XCTFail("\(tenant): \(rejection)") }
            done.fulfill()
        }
    }

    /// Three reports of acme held in the store: globex's report runs beside acme's first, and
    /// completes while acme's are still held, not after them.
    func testAnotherTenantsReportDoesNotWaitBehindATenantsReports() throws {
        let source = HeldSource(holding: ["acme"])
        let service = ModelPerformanceService(source: source, clock: ManualClock(), maturityDays: 60)
        let acme = expectation(description: "acme's three reports")
        acme.expectedFulfillmentCount = 3
        for _ in 0..<3 { try report(service, "acme", acme) }
        let globex = expectation(description: "globex's report")
        try report(service, "globex", globex)
        // Generous: globex's report waits for no one; before, it waited for acme's three.
        wait(for: [globex], timeout: 30)
        // The two first ran side by side, in either order; acme's second had not begun.
        XCTAssertEqual(source.began.withLock { $0 }.sorted(), ["acme", "globex"], "acme's second began before its first ended")
        for _ in 0..<3 { source.release.signal() }
        wait(for: [acme], timeout: 30)
        XCTAssertEqual(source.began.withLock { $0 }.suffix(2), ["acme", "acme"])
    }

    /// On one thread, the tenants with reports waiting take turns: globex's report, asked after
    /// three of acme's, runs second.
    func testTenantsTakeTurnsOnOneThread() throws {
        let source = HeldSource(holding: ["acme"])
        let service = ModelPerformanceService(source: source, clock: ManualClock(), maturityDays: 60, concurrentReports: 1)
        let all = expectation(description: "every report")
        all.expectedFulfillmentCount = 5
        for _ in 0..<3 { try report(service, "acme", all) }
        try report(service, "globex", all)
        try report(service, "initech", all)
        for _ in 0..<3 { source.release.signal() }
        wait(for: [all], timeout: 30)
        XCTAssertEqual(source.began.withLock { $0 }, ["acme", "globex", "initech", "acme", "acme"])
    }

    /// The queue alone: at most one job of a tenant at once, whatever the threads.
    func testAtMostOneJobOfATenantRunsAtOnce() {
        let queue = FairShareQueue(label: "test", concurrency: 4)
        let running = Mutex<(now: Int, most: Int)>((0, 0))
        let done = expectation(description: "every job")
        done.expectedFulfillmentCount = 20
        for _ in 0..<20 {
            queue.submit(tenant: "acme") {
                running.withLock {
                    $0.now += 1; $0.most = max($0.most, $0.now)
                }
                running.withLock { $0.now -= 1 }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(running.withLock { $0.most }, 1)
    }
}
