import Foundation

/// Why `HTTPServer.start()` failed. `description` is the whole message, e.g.
/// `127.0.0.1:8080: Address already in use`.
public struct HTTPServerError: Error, Equatable, CustomStringConvertible, LocalizedError {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The configuration has an unusable value.
        case invalidConfiguration
        /// The address could not be resolved, bound or listened on.
        case bind
        /// libevent could not set up an event loop.
        case eventLoop
        /// The TLS certificate, key or client CA file is missing, unreadable, invalid or
        /// mismatched, or OpenSSL refused a setting.
        case tls
        /// `start()` was called twice, or after `shutdown`.
        case notStartable
    }

    /// What went wrong.
    public let kind: Kind
    /// The full, log-safe message.
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The full message.
    public var description: String { message }
    /// The full message, for code that reads `localizedDescription`.
    public var errorDescription: String? { message }
}
