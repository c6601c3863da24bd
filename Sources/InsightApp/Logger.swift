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
/// `flushInterval` later or once `flushBytes` are waiting (a `write` per request was 7 % of an
/// evaluation's CPU). Every other line is written at once, after whatever waits, so lines stay
/// in order and a warning or error is never held back. A SIGKILL can lose the deferred lines of
/// the last `flushInterval`; a clean stop writes them (its last line is not deferred).
public final class Logger: Sendable {
    public let minimumLevel: LogLevel
    private let clock: any Clock
    private let output: LogOutput
    private let flushTimer: RepeatingTimer

    /// The longest a deferred line waits.
    public static let flushInterval: DispatchTimeInterval = .milliseconds(100)
    /// Deferred lines are written as soon as this many bytes wait.
    public static let flushBytes = 32 << 10

    public init(minimumLevel: LogLevel, clock: any Clock = SystemClock(), sink: FileHandle = .standardError) {
        self.minimumLevel = minimumLevel
        self.clock = clock
        let output = LogOutput(sink)
        self.output = output
        flushTimer = RepeatingTimer(every: Self.flushInterval) { [weak output] in output?.flush() }
    }

    deinit {
        flushTimer.cancel()
        output.flush()
    }

    /// Writes `message` with `fields` if `level` is enabled; a `deferred` line may wait (see the
    /// type's notes).
    public func log(_ level: LogLevel, _ message: String, _ fields: [(String, JSONValue)] = [], deferred: Bool = false) {
        log(level, message, deferred: deferred) { object in
            for (key, value) in fields { object.member(key, value) }
        }
    }

    /// Writes `message` with the fields `write` adds straight to the line (no array of
    /// `JSONValue`s first: the request line is written for every request).
    public func log(_ level: LogLevel, _ message: String, deferred: Bool = false,
                    fields write: (inout JSONObjectWriter) -> Void) {
        guard level >= minimumLevel else { return }
        var object = JSONObjectWriter(capacity: 256)
        object.member("ts", Timestamp.format(clock.now()))
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
/// Two locks, so that appending a deferred line does not wait for the disk: `pending` is held
/// only to append or to take the waiting lines; `sink` is held while writing them, and is taken
/// before the lines are, so that writes reach the file in the order the lines were appended.
private final class LogOutput: Sendable {
    private let sink: Mutex<FileHandle>
    private let pending = Mutex<[UInt8]>([])

    init(_ sink: FileHandle) { self.sink = Mutex(sink) }

    func write(_ line: [UInt8], deferred: Bool) {
        // Only the line that fills the buffer flushes it; the lines after it do not queue up
        // behind that write.
        let filled = pending.withLock { pending in
            let before = pending.count
            pending.append(contentsOf: line)
            return before < Logger.flushBytes && pending.count >= Logger.flushBytes
        }
        if !deferred || filled { flush() }
    }

    func flush() {
        sink.withLock { sink in
            let lines = pending.withLock { pending in
                defer { pending.removeAll(keepingCapacity: true) }
                return pending
            }
            if !lines.isEmpty { sink.write(Data(lines)) }
        }
    }
}

/// A repeating timer on a global dispatch queue, running until cancelled.
private final class RepeatingTimer: @unchecked Sendable {
    // @unchecked: a dispatch source may be cancelled from any thread; the Dispatch overlay
    // just does not declare it Sendable.
    private let source: any DispatchSourceTimer

    init(every interval: DispatchTimeInterval, _ handler: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(20))
        source.setEventHandler(handler: handler)
        source.resume()
    }

    func cancel() { source.cancel() }
}
