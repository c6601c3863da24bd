import Foundation
import InsightApp
import JSON

/// The daemon's answer to an admin request: status and parsed JSON body (nil when empty or not JSON).
public struct AdminAnswer: Sendable {
    public let status: Int
    public let json: JSONValue?

    public init(status: Int, json: JSONValue?) {
        self.status = status
        self.json = json
    }
}

/// How insightctl reaches a running daemon's admin API (injected by the executable so that
/// InsightApp, which the daemon links, carries no HTTP client).
public protocol AdminTransport: Sendable {
    func send(_ method: String, _ path: String, baseURL: URL, key: String, body: String?) throws -> AdminAnswer
}

/// The running daemon's API as insightctl reaches it: `--url`, and a key from `--key-file` or
/// `$INSIGHTD_ADMIN_KEY` (never `--key`, which ps would show).
struct DaemonConnection {
    static let url = Option("url", "URL", "the daemon's API (default http://$INSIGHTD_LISTEN, then http://127.0.0.1:8080)")
    static let keyFile = Option(
        "key-file", "FILE",
        "a file whose first line is the key (else $INSIGHTD_ADMIN_KEY; never the key itself on the command line, where ps shows it to every user)"
    )
    /// Declared so that a key given on the command line is refused for what it is.
    static let key = Option.refused(
        "key", "KEY",
        because: "a key on the command line is visible to every user through ps; "
            + "set INSIGHTD_ADMIN_KEY or use --key-file FILE")
    /// The options of every command that talks to the daemon.
    static let options = [url, keyFile, key]

    let base: URL
    let key: String
    let transport: any AdminTransport

    init(_ invocation: Invocation, environment: [String: String], transport: (any AdminTransport)?) throws {
        let url = invocation.value(Self.url) ?? environment["INSIGHTD_LISTEN"].map { "http://\($0)" } ?? "http://127.0.0.1:8080"
        key = try Self.adminKey(file: invocation.value(Self.keyFile), environment: environment)
        guard let base = URL(string: url) else { throw AppError("--url \(url) is not a URL") }
        guard let transport else { throw AppError("this command needs a connection to the daemon, which this build lacks") }
        self.base = base
        self.transport = transport
    }

    /// Sends the request; an answer other than 2xx with a JSON body is an error naming the problem.
    func send(_ method: String, _ path: String, body: String?) throws -> JSONValue {
        let answer = try transport.send(method, path, baseURL: base, key: key, body: body)
        guard (200..<300).contains(answer.status) else {
            let detail = answer.json?["detail"]?.stringValue ?? "HTTP \(answer.status)"
            throw AppError("insightd answered \(answer.status) \(answer.json?["code"]?.stringValue ?? ""): \(detail)")
        }
        guard let json = answer.json else { throw AppError("insightd answered without a body") }
        return json
    }

    /// The admin key from `--key-file` (its first line) or `$INSIGHTD_ADMIN_KEY`.
    static func adminKey(file: String?, environment: [String: String]) throws -> String {
        if let file {
            // The admin key is a key file like the daemon's: refused when others can read it.
            try KeyringFile.refuseIfExposed(file, what: "--key-file")
            guard let data = FileManager.default.contents(atPath: file) else {
                throw AppError("cannot read --key-file \(file): \(String(cString: strerror(errno)))")
            }
            let key =
                String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard !key.isEmpty else { throw AppError("--key-file \(file) holds no key") }
            return key
        }
        guard let key = environment["INSIGHTD_ADMIN_KEY"], !key.isEmpty else {
            throw AppError("an admin key is needed: set INSIGHTD_ADMIN_KEY or use --key-file FILE")
        }
        return key
    }
}
