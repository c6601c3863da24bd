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
        guard level >= minimumLevel else { return }
        var object = JSONObject()
        object.append("ts", .string(Timestamp.format(clock.now())))
        object.append("level", .string(level.rawValue))
        object.append("msg", .string(message))
        for (key, value) in fields { object.append(key, value) }
        var line = JSONWriter.bytes(.object(object))
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
private final class LogOutput: Sendable {
    private struct State: ~Copyable {
        let sink: FileHandle
        var pending: [UInt8] = []
    }

    private let state: Mutex<State>

    init(_ sink: FileHandle) { state = Mutex(State(sink: sink)) }

    func write(_ line: [UInt8], deferred: Bool) {
        state.withLock { state in
            state.pending.append(contentsOf: line)
            if !deferred || state.pending.count >= Logger.flushBytes { Self.flush(&state) }
        }
    }

    func flush() {
        state.withLock { Self.flush(&$0) }
    }

    private static func flush(_ state: inout State) {
        guard !state.pending.isEmpty else { return }
        state.sink.write(Data(state.pending))
        state.pending.removeAll(keepingCapacity: true)
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
