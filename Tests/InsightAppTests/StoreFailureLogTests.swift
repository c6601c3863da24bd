import Foundation
@testable import InsightApp
import JSON
import XCTest

/// The store's failures reach the log with their cause, but not as a line per failed request.
final class StoreFailureLogTests: XCTestCase {
    private var file: URL!

    override func setUpWithError() throws {
        file = FileManager.default.temporaryDirectory.appendingPathComponent("store-failures-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: file) }

    /// Each line as "msg failedWrites error".
    private func lines() throws -> [String] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { line in
            guard case .object(let o) = try JSONParser.parse(String(line)), case .string(let msg)? = o["msg"],
                case .number(let count)? = o["failedWrites"]
            else { return "not a failure line: \(line)" }
            if case .string(let error)? = o["error"] { return "\(msg) \(Int(count)) \(error)" }
            return "\(msg) \(Int(count))"
        }
    }

    func testTheFirstFailureIsLoggedAtOnceThenAtMostOncePerIntervalAndRecoveryOnce() throws {
        let log = StoreFailureLog(
            logger: Logger(minimumLevel: .info, sink: try FileHandle(forWritingTo: file)),
            intervalSeconds: 3600)
        log.failed(3, error: "database or disk is full")
        log.failed(2, error: "database or disk is full")  // within the interval: counted, not logged
        log.committed()  // after a logged failure: one line
        log.committed()  // nothing more to say
        log.failed(4, error: "disk I/O error")  // still within the interval of the last line
        log.committed()  // no failure line since the recovery: silent
        XCTAssertEqual(try lines(), ["store write failed 3 database or disk is full", "store writes succeed again 5"])
    }

    func testAfterTheIntervalTheNextLineCountsEveryFailureSinceTheLast() throws {
        let log = StoreFailureLog(
            logger: Logger(minimumLevel: .info, sink: try FileHandle(forWritingTo: file)),
            intervalSeconds: 0.05)
        log.failed(1, error: "full")
        log.failed(6, error: "full")
        Thread.sleep(forTimeInterval: 0.1)
        log.failed(2, error: "full")
        log.committed()
        XCTAssertEqual(try lines(), ["store write failed 1 full", "store write failed 8 full", "store writes succeed again 9"])
    }
}
