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

    /// The messages of the complete lines in the file: a line still being written (the logger
    /// may write a large batch in several `write` calls) is not read until its newline is there.
    private func messages() throws -> [String] {
        let text = try String(contentsOf: file, encoding: .utf8)
        let complete = text.lastIndex(of: "\n").map { text[...$0] } ?? ""
        return try complete.split(separator: "\n").map { line in
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
        // An hour's interval: only the full buffer can get the lines written within the test.
        let logger = Logger(minimumLevel: .info, sink: try FileHandle(forWritingTo: file), flushInterval: .seconds(3600))
        let padding = String(repeating: "x", count: 1000)
        var count = 0
        var written = 0
        // Lines of about 1 KiB until more than `flushBytes` were logged: the line that fills the
        // buffer has everything written at once, without waiting for the interval.
        while written <= Logger.flushBytes + 3_000 {
            logger.log(.info, "line \(count)", [("padding", .string(padding))], deferred: true)
            written += 1_000 + 80
            count += 1
        }
        let deadline = Date().addingTimeInterval(5)
        while try messages().count < count - 4, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let lines = try messages()
        // Up to three lines after the one that filled the buffer may wait again.
        XCTAssertGreaterThanOrEqual(lines.count, count - 4, "the full buffer was not written")
        XCTAssertEqual(lines, (0..<lines.count).map { "line \($0)" }, "lines out of order")
    }

    /// A pipe: the logger writes to `write`, the test reads `read`.
    private func pipe() -> (read: FileHandle, write: FileHandle) {
        let pipe = Pipe()
        return (pipe.fileHandleForReading, pipe.fileHandleForWriting)
    }

    /// Reads `handle` on a thread of its own until a line with message `last` arrived.
    private func readUntil(_ handle: FileHandle, last: String, after delay: TimeInterval = 0) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let marker = "\"msg\":\"\(last)\""
        let target = file!
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: delay)
            var received: [UInt8] = []
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                received.append(contentsOf: chunk)
                // The marker is in the last line: look only at the end of what arrived.
                if String(decoding: received.suffix(chunk.count + marker.utf8.count), as: UTF8.self).contains(marker) { break }
            }
            try? Data(received).write(to: target)
            done.signal()
        }
        return done
    }

    func testAStalledReaderOfStderrDoesNotHoldUpTheCaller() throws {
        let (read, write) = pipe()
        let logger = Logger(minimumLevel: .info, sink: write)
        // Four times what a pipe holds: with nobody reading, a caller that wrote the lines
        // itself would block in write(2) until somebody read them.
        let padding = String(repeating: "y", count: 1000)
        let logged = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for i in 0..<256 { logger.log(.info, "line \(i)", [("padding", .string(padding))], deferred: true) }
            logged.signal()
        }
        let returned = logged.wait(timeout: .now() + 10) == .success
        XCTAssertTrue(returned, "logging 256 KiB of deferred lines waited for the reader of stderr")
        // Now read: every line arrives, in order, and a line that is not deferred comes last.
        let done = readUntil(read, last: "end")
        logger.warning("end")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(try messages(), (0..<256).map { "line \($0)" } + ["end"])
    }

    func testPastTheBacklogTheCallerWritesItselfAndNoLineIsLost() throws {
        let (read, write) = pipe()
        let logger = Logger(minimumLevel: .info, sink: write, flushInterval: .seconds(3600))
        // The reader starts late: the backlog fills, then callers write (and wait) themselves.
        let done = readUntil(read, last: "end", after: 0.5)
        let padding = String(repeating: "z", count: 4000)
        let count = Logger.backlogBytes / 4000 + 200
        var mostWaiting = 0
        for i in 0..<count {
            logger.log(.info, "line \(i)", [("padding", .string(padding))], deferred: true)
            mostWaiting = max(mostWaiting, logger.waitingBytes)
        }
        // Past the backlog the caller wrote the lines itself; without the bound all 9 MB would
        // have waited in memory. (Measured on the memory, not on the time the caller waited for
        // the late reader: under a loaded test run that timing failed once, 0.03 s for 0.3 s.)
        XCTAssertLessThanOrEqual(mostWaiting, Logger.backlogBytes + 4_200, "the backlog did not bound the waiting lines")
        logger.warning("end")
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try messages(), (0..<count).map { "line \($0)" } + ["end"])
        XCTAssertEqual(logger.droppedLines, 0)
    }

    func testLinesThatStderrRefusesAreCountedAndLoggingGoesOn() throws {
        signal(SIGPIPE, SIG_IGN)  // as the daemon sets it: a closed pipe is EPIPE, not a signal
        let (read, write) = pipe()
        try read.close()
        let logger = Logger(minimumLevel: .info, sink: write)
        logger.warning("nobody reads this")
        XCTAssertEqual(logger.droppedLines, 1)
        logger.log(.info, "a", deferred: true)
        logger.log(.info, "b", deferred: true)
        logger.error("still here")
        XCTAssertEqual(logger.droppedLines, 4, "each refused line is counted, and logging goes on")
    }
}
