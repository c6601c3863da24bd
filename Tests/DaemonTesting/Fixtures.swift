import Foundation
import InsightApp
import InsightDomain
import SQLiteClient

#if canImport(Glibc)
    import Glibc
#endif

/// Request bodies the API tests of several targets send.
public enum RequestBodies {
    /// One coaching insight, schema version 1.
    public static let insight = #"{"type":"isLikelyBeingCoached","schemaVersion":1}"#

    /// A payment evaluation asking for `insights`, with `extra` members (each starting with a comma).
    public static func evaluation(_ extra: String = "", insights: String = insight) -> String {
        #"{"operationCategory":"payment","insights":[\#(insights)]\#(extra)}"#
    }

    /// A payment evaluation naming an account and a device (tenants' and the console's tests).
    public static func subjectEvaluation(account: String = "acct-shared", device: String = "dev-shared") -> String {
        #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"\#(account)","device":"\#(device)"}}"#
    }
}

/// Interaction events (the members of `interaction.events`, joined by commas) shaped like the
/// sessions the committed models were trained on.
public enum InteractionEvents {
    /// Authority impersonation as docs/features.md describes it: a call begun before the session,
    /// the phone at the ear, digits typed in dictated bursts, a long hesitation before submit.
    public static let coached: String = {
        var events = [
            #"{"t":0,"type":"sessionStart"}"#, #"{"t":200,"type":"proximityNear"}"#,
            #"{"t":9000,"type":"fieldFocus","field":"payee"}"#
        ]
        var t = 9000
        for burst in 0..<6 {
            for _ in 0..<4 { t += 180; events.append(#"{"t":\#(t),"type":"keyDown","field":"payee"}"#) }
            t += burst % 2 == 0 ? 4200 : 3600
        }
        t += 2000; events.append(#"{"t":\#(t),"type":"fieldFocus","field":"amount"}"#)
        for _ in 0..<4 { t += 900; events.append(#"{"t":\#(t),"type":"keyDown","field":"amount"}"#) }
        t += 2500; events.append(#"{"t":\#(t),"type":"delete","field":"amount"}"#)
        t += 1500; events.append(#"{"t":\#(t),"type":"keyDown","field":"amount"}"#)
        t += 38000; events.append(#"{"t":\#(t),"type":"submit"}"#)
        return events.joined(separator: ",")
    }()

    /// A routine payment: quick, steady typing, no call.
    public static let genuine: String = {
        var events = [#"{"t":0,"type":"sessionStart"}"#, #"{"t":1400,"type":"fieldFocus","field":"payee"}"#]
        var t = 1400
        for i in 0..<22 { t += 140 + (i % 3) * 25; events.append(#"{"t":\#(t),"type":"keyDown","field":"payee"}"#) }
        t += 900; events.append(#"{"t":\#(t),"type":"fieldFocus","field":"amount"}"#)
        for _ in 0..<3 { t += 160; events.append(#"{"t":\#(t),"type":"keyDown","field":"amount"}"#) }
        t += 1800; events.append(#"{"t":\#(t),"type":"submit"}"#)
        return events.joined(separator: ",")
    }()
}

/// Statuses collected from several threads.
public final class StatusBox: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var storage: [Int] = []
    public init() {}
    public func append(_ status: Int) { lock.lock(); storage.append(status); lock.unlock() }
    public var values: [Int] { lock.lock(); defer { lock.unlock() }; return storage }
}

/// The totals of a purge, handed from the retention job's thread to the test's.
public final class ReportBox: @unchecked Sendable {
    // @unchecked: written once before the expectation is fulfilled, read after the wait.
    public var report: RetentionReport?
    public init() {}
}

/// Reads a table's row count through its own connection.
public struct InsightStorageCount {
    public let path: String
    public init(path: String) { self.path = path }
    public func count(_ table: String) throws -> String? {
        try SQLiteConnection(path: path).scalarText("SELECT count(*) FROM \(table)")
    }
}

/// Runs `body` with `text` as its standard input (a file in place of descriptor 0).
public func withStandardInput<T>(_ text: String, _ body: () throws -> T) rethrows -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("stdin-\(UUID().uuidString)").path
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    defer { unlink(path) }
    let file = open(path, O_RDONLY)
    let saved = dup(STDIN_FILENO)
    dup2(file, STDIN_FILENO)
    defer {
        dup2(saved, STDIN_FILENO)
        close(saved)
        close(file)
    }
    return try body()
}

/// What `body` prints on standard output, with its result.
public func captureStandardOutput(_ body: () -> Int32) -> (status: Int32, output: String) {
    capture(STDOUT_FILENO, body)
}

/// What `body` prints on standard error, with its result.
public func captureStandardError(_ body: () -> Int32) -> (status: Int32, output: String) {
    capture(STDERR_FILENO, body)
}

/// What `body` writes to `descriptor` (a file in its place meanwhile), with its result.
private func capture(_ descriptor: Int32, _ body: () -> Int32) -> (status: Int32, output: String) {
    fflush(nil)
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("output-\(UUID().uuidString)").path
    let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let saved = dup(descriptor)
    dup2(file, descriptor)
    let status = body()
    fflush(nil)
    dup2(saved, descriptor)
    close(saved)
    close(file)
    let output = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    unlink(path)
    return (status, output)
}

/// One sample line of the metrics text format: its name, labels and value.
public struct MetricSample: Sendable {
    public let name: String
    public let labels: [String: String]
    public let value: Double

    /// A strict reader of the text format's sample lines (comments are checked for shape): a
    /// line it cannot read throws, naming the line.
    public static func parse(_ text: String) throws -> [MetricSample] {
        var samples: [MetricSample] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#") {
                guard line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") else { throw AppError("not a HELP or TYPE comment: \(line)") }
                continue
            }
            let name = String(line.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" })
            var rest = line.dropFirst(name.count)
            var labels: [String: String] = [:]
            if rest.first == "{" {
                // Label values may hold braces (route templates): the label set ends at the last one.
                guard let close = rest.lastIndex(of: "}") else { throw AppError("unclosed labels: \(line)") }
                for pair in rest[rest.index(after: rest.startIndex)..<close].split(separator: "\",").map({
                    $0.hasSuffix("\"") ? $0 : $0 + "\""
                }) {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2 else { throw AppError("a label without a value: \(line)") }
                    labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
                }
                rest = rest[rest.index(after: close)...]
            }
            let number = rest.trimmingCharacters(in: .whitespaces)
            guard let value = number == "+Inf" ? Double.infinity : Double(number) else { throw AppError("not a value: \(line)") }
            samples.append(MetricSample(name: name, labels: labels, value: value))
        }
        return samples
    }
}
