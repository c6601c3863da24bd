import Foundation
import InsightApp
import JSON
import XCTest

/// The logger's contract: one JSON object per line, lines in the order they were logged, deferred
/// lines written at the latest after `flushInterval` or as soon as `flushBytes` wait, and any
/// line that is not deferred written at once, after the deferred ones.
final class LoggerTests: XCTestCase {
    private var file: URL!

    override func setUpWithError() throws {
        file = FileManager.default.temporaryDirectory.appendingPathComponent("logger-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: file)
    }

    private func messages() throws -> [String] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { line in
            guard case .object(let object) = try JSONParser.parse(String(line)), case .string(let message)? = object["msg"] else {
                XCTFail("not a JSON log line: \(line)")
                return ""
            }
            return message
        }
    }

    func testAnImmediateLineWritesTheDeferredOnesFirstInOrder() throws {
        let logger = Logger(minimumLevel: .info, sink: try FileHandle(forWritingTo: file))
        logger.log(.info, "a", deferred: true)
        logger.log(.info, "b", deferred: true)
        logger.log(.debug, "below the level")
        logger.warning("c")  // not deferred: written now, after a and b
        XCTAssertEqual(try messages(), ["a", "b", "c"])
    }

    func testDeferredLinesAreWrittenWithinTheFlushInterval() throws {
        let logger = Logger(minimumLevel: .info, sink: try FileHandle(forWritingTo: file))
        logger.log(.info, "request", [("status", .number(200))], deferred: true)
        let deadline = Date().addingTimeInterval(2)
        while try messages().isEmpty, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertEqual(try messages(), ["request"], "a deferred line was not written within 2 s (flush interval 100 ms)")
    }

    func testDeferredLinesAreWrittenAtOnceWhenTheBufferFills() throws {
        let logger = Logger(minimumLevel: .info, sink: try FileHandle(forWritingTo: file))
        let padding = String(repeating: "x", count: 1000)
        var count = 0
        var written = 0
        // Lines of about 1 KiB until more than `flushBytes` were logged: the line that fills the
        // buffer writes everything at once, without waiting for the timer.
        while written <= Logger.flushBytes + 3_000 {
            logger.log(.info, "line \(count)", [("padding", .string(padding))], deferred: true)
            written += 1_000 + 80
            count += 1
        }
        let lines = try messages()
        // Up to three lines after the one that filled the buffer may wait again.
        XCTAssertGreaterThanOrEqual(lines.count, count - 4, "the full buffer was not written at once")
        XCTAssertEqual(lines, (0..<lines.count).map { "line \($0)" }, "lines out of order")
    }
}
