import Dispatch
import Foundation
import InsightDomain
import JSON
import Synchronization

/// Severity of a log line.
public enum LogLevel: String, Sendable, Comparable, CaseIterable {
    case debug, info, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// One JSON object per line on stderr (journald and log shippers read it as is). Callers pass
/// only log-safe fields: ids, routes, codes, counts — never bodies or subject identifiers.
///
/// Per-request lines may be *deferred*: they wait in memory and go out together, at the latest
/// `flushInterval` later or once `flushBytes` are waiting (a `write` system call per request
/// would cost a sizeable share of an evaluation). A thread of the logger's own writes them, so
/// the event loops that log never wait for the disk or for a slow reader of stderr. Every
/// other line is written at once by its caller, after whatever waits, so lines stay in order
/// and a warning or error is never held back. A SIGKILL can lose the deferred lines of the
/// last `flushInterval`; a clean stop writes them (its last line is not deferred). Logging
/// never stops the daemon: lines that stderr refuses (its reader gone) are counted in
/// `droppedLines` and the daemon goes on.
public final class Logger: Sendable {
    public let minimumLevel: LogLevel
    private let clock: any Clock
    private let output: LogOutput

    /// The longest a deferred line waits.
    public static let flushInterval: DispatchTimeInterval = .milliseconds(100)
    /// Deferred lines are written as soon as this many bytes wait.
    public static let flushBytes = 32 << 10
    /// The most bytes of deferred lines that wait while stderr is slow (about a second of request
    /// lines at full load); past it, a caller writes the lines itself, so memory stays bounded
    /// and no line is dropped for being late.
    public static let backlogBytes = 8 << 20

    /// A logger writing to `sink`. `flushInterval` is for tests that must tell a full buffer's
    /// write from the periodic one.
    public init(
        minimumLevel: LogLevel, clock: any Clock = SystemClock(), sink: FileHandle = .standardError,
        flushInterval: DispatchTimeInterval = Logger.flushInterval
    ) {
        self.minimumLevel = minimumLevel
        self.clock = clock
        output = LogOutput(sink, flushInterval: flushInterval)
    }

    deinit {
        output.stop()
    }

    /// Lines lost because stderr refused them (a closed pipe, a full non-blocking one).
    public var droppedLines: Int { output.droppedLines }

    /// Bytes of deferred lines waiting to be written (at most `backlogBytes`).
    public var waitingBytes: Int { output.waitingBytes }

    /// Writes `message` with `fields` if `level` is enabled; a `deferred` line may wait (see the
    /// type's notes).
    public func log(_ level: LogLevel, _ message: String, _ fields: [(String, JSONValue)] = [], deferred: Bool = false) {
        log(level, message, deferred: deferred) { object in
            for (key, value) in fields { object.member(named: key, value) }
        }
    }

    /// Writes `message` with the fields `write` adds straight to the line (no array of
    /// `JSONValue`s first: the request line is written for every request).
    public func log(
        _ level: LogLevel, _ message: String, deferred: Bool = false,
        fields write: (inout JSONObjectWriter) -> Void
    ) {
        guard level >= minimumLevel else { return }
        var object = JSONObjectWriter(capacity: 256)
        object.member("ts", timestamp: clock.now())
        object.member("level", level.rawValue)
        object.member("msg", message)
        write(&object)
        var line = object.bytes()
        line.append(0x0A)
        output.write(line, deferred: deferred)
    }

    /// Writes every deferred line now.
    public func flush() {
        output.flush()
    }

    public func debug(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.error, message, fields) }
}

/// The log's file and the deferred lines waiting for it.
///
/// Two locks, so that appending a line never waits for the disk: `pending` is held only to
/// append or to take the waiting lines; `sink` is held while writing them, and is taken before
/// the lines are, so that writes reach the file in the order the lines were appended. The
/// writing thread sleeps on `wake` between writes: a deferred line that fills the buffer wakes
/// it, and it wakes by itself every flush interval.
private final class LogOutput: Sendable {
    private struct Pending {
        var bytes: [UInt8] = []
        var stopping = false
    }

    private let sink: Mutex<LogSink>
    private let pending = Mutex(Pending())
    private let wake = DispatchSemaphore(value: 0)
    private let dropped = Atomic<Int>(0)

    init(_ sink: FileHandle, flushInterval: DispatchTimeInterval) {
        self.sink = Mutex(LogSink(sink))
        let thread = Thread { [self] in
            while true {
                _ = wake.wait(timeout: .now() + flushInterval)
                if pending.withLock({ $0.stopping }) { return }
                flush()
            }
        }
        thread.name = "insightd-log"
        thread.start()
    }

    var droppedLines: Int { dropped.load(ordering: .relaxed) }

    var waitingBytes: Int { pending.withLock { $0.bytes.count } }

    func write(_ line: [UInt8], deferred: Bool) {
        let (before, after) = pending.withLock { pending in
            let before = pending.bytes.count
            pending.bytes.append(contentsOf: line)
            return (before, pending.bytes.count)
        }
        if !deferred || after >= Logger.backlogBytes {
            flush()
        } else if before < Logger.flushBytes && after >= Logger.flushBytes {
            // Only the line that fills the buffer wakes the thread.
            wake.signal()
        }
    }

    func flush() {
        sink.withLock { sink in
            pending.withLock { swap(&$0.bytes, &sink.lines) }
            let lost = sink.writeLines()
            if lost > 0 { dropped.add(lost, ordering: .relaxed) }
        }
    }

    /// Writes what waits and ends the thread (which holds the output until it has ended).
    func stop() {
        pending.withLock { $0.stopping = true }
        wake.signal()
        flush()
    }
}

/// The log's file descriptor, written with `write(2)` so that a failure is an answer, not a trap
/// (Foundation's `FileHandle.write` traps when the reader of a pipe has gone), and the buffer
/// the lines are written from, swapped with the pending one so neither is reallocated.
private struct LogSink {
    private let handle: FileHandle
    var lines: [UInt8] = []

    init(_ handle: FileHandle) { self.handle = handle }

    /// Writes `lines` and empties them; returns how many lines stderr refused. A non-blocking
    /// descriptor that stays full for a second counts as refusing.
    mutating func writeLines() -> Int {
        defer {
            // A buffer that grew while stderr was slow is not kept at that size.
            if lines.capacity > 4 * Logger.flushBytes { lines = [] } else { lines.removeAll(keepingCapacity: true) }
        }
        return lines.withUnsafeBytes { bytes in
            let offset = DescriptorOutput.write(bytes, to: handle.fileDescriptor)
            return bytes[offset...].reduce(0) { $1 == 0x0A ? $0 + 1 : $0 }
        }
    }
}

/// Writes to a file descriptor with `write(2)`, where a failure is an answer, not a trap
/// (Foundation's `FileHandle.write` traps when the reader of a pipe has gone).
public enum DescriptorOutput {
    /// Writes `bytes` to `fd`, retrying partial writes and interruptions; returns how many bytes
    /// were written (fewer on an error, or when a non-blocking descriptor stays full for a second).
    static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Int {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                if poll(&ready, 1, 1_000) > 0 { continue }
                break
            } else {
                break
            }
        }
        return offset
    }

    /// A message on stderr, as far as stderr takes it: for the lines before an exit, whose status
    /// must stay the one chosen, whatever became of stderr.
    public static func standardError(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(UnsafeRawBufferPointer($0), to: STDERR_FILENO) }
    }
}
