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
public final class Logger: Sendable {
    public let minimumLevel: LogLevel
    private let clock: any Clock
    private let sink: Mutex<FileHandle>

    public init(minimumLevel: LogLevel, clock: any Clock = SystemClock(), sink: FileHandle = .standardError) {
        self.minimumLevel = minimumLevel
        self.clock = clock
        self.sink = Mutex(sink)
    }

    /// Writes `message` with `fields` if `level` is enabled.
    public func log(_ level: LogLevel, _ message: String, _ fields: [(String, JSONValue)] = []) {
        guard level >= minimumLevel else { return }
        var object = JSONObject()
        object.append("ts", .string(Timestamp.format(clock.now())))
        object.append("level", .string(level.rawValue))
        object.append("msg", .string(message))
        for (key, value) in fields { object.append(key, value) }
        var line = JSONWriter.bytes(.object(object))
        line.append(0x0A)
        sink.withLock { $0.write(Data(line)) }
    }

    public func debug(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [(String, JSONValue)] = []) { log(.error, message, fields) }
}
