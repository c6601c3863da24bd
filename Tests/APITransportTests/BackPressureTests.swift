import DaemonTesting
import Foundation
import InsightStorage
import SQLiteClient
import XCTest

/// A full write queue answers 503 with Retry-After at once, and what was queued still commits.
final class BackPressureTests: XCTestCase {
    func testFullWriteQueueAnswers503AndQueuedWritesStillCommit() throws {
        let daemon = try TestDaemon(.live) { settings in
            settings.writeQueueCapacity = 1
            settings.commitBatch = 1
        }
        let (_, key) = try daemon.createCaller(roles: [.evaluate])
        // Hold the database's write lock so the writer stalls inside its first transaction.
        let blocker = try SQLiteConnection(path: daemon.service.settings.databasePath)
        try blocker.execute("BEGIN IMMEDIATE")

        let body = RequestBodies.evaluation()
        let statuses = StatusBox()
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            DispatchQueue.global().async {
                let status = (try? daemon.request("POST", "/v1/evaluations", key: key, json: body).status) ?? -1
                statuses.append(status)
                group.leave()
            }
            // Let the first job reach the stalled writer and the second fill the queue.
            Thread.sleep(forTimeInterval: 0.3)
        }
        let refused = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.code, "serverError")
        XCTAssertEqual(refused.headers["retry-after"], "1")

        try blocker.execute("COMMIT")
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(statuses.values, [200, 200])
        let count = try SQLiteConnection(path: daemon.service.settings.databasePath)
            .scalarText("SELECT count(*) FROM evaluations")
        XCTAssertEqual(count, "2")
    }
}
