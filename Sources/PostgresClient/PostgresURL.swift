/// A PostgreSQL connection URI (`postgres://user:password@host:port/db?param=value`), read
/// strictly as RFC 3986 reads it before libpq ever sees it.
///
/// libpq reads the user information up to the first `@` or `/`: a password holding an unescaped
/// `/`, `?`, `#` or `@` (common in generated passwords) makes it take part of the password for
/// the host, the port or the database, and it then quotes that part in its error messages, which
/// reach the log. Such a URL is refused here instead, with a message that names the problem and
/// never any part of the URL's user information.
public struct PostgresURL: Sendable, Equatable {
    /// The URL as given.
    public let text: String
    /// The user information's password, percent-decoded; nil when there is none.
    public let password: String?
    /// The hosts, in libpq's multi-host form (`h1:5432,h2:5432`) as many as are listed: libpq
    /// tries them in order and keeps the first that matches `target_session_attrs`.
    public let hostCount: Int

    /// Why a connection URI cannot be used. `description` never quotes the URL.
    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        /// Not `postgres://` or `postgresql://`.
        case scheme
        /// The user name or password holds a character RFC 3986 does not allow there unescaped
        /// (`/ ? # @ [ ]`, a space, a quote, …), or a `%` that does not start an escape.
        case unescapedUserInformation
        /// A `%` elsewhere that is not followed by two hexadecimal digits.
        case badPercentEscape
        /// The port is not a number from 1 to 65535.
        case port
        /// `target_session_attrs` asks for a server that may not take writes (`any`,
        /// `read-only`, `standby`, `prefer-standby`): every connection of insightd writes, or
        /// reads what was just written, so it needs the primary.
        case targetSessionAttributes

        public var description: String {
            switch self {
            case .scheme: return "must be a PostgreSQL connection URI, postgres://user:password@host:port/db"
            case .unescapedUserInformation:
                return "the user name or password holds a character that must be percent-encoded in a URL "
                    + "(any of @ / ? # [ ] % \" or a space, or a non-ASCII letter): write it as %XX, e.g. @ as %40, / as %2F, "
                    + "? as %3F, # as %23, % as %25 (the value is not shown: it holds a password)"
            case .badPercentEscape: return "has a % that is not followed by two hexadecimal digits: write % itself as %25"
            case .port: return "the port must be a number from 1 to 65535"
            case .targetSessionAttributes:
                return "target_session_attrs must be read-write or primary, or left out (insightd asks for read-write): "
                    + "every connection needs the server that takes writes, which with several hosts is how libpq finds the primary"
            }
        }
    }

    /// Reads `text`, or throws what is wrong with it.
    public init(parsing text: String) throws(Problem) {
        let bytes = Array(text.utf8)
        guard let schemeEnd = Self.schemeEnd(bytes) else { throw .scheme }
        let rest = bytes[schemeEnd...]
        // The authority ends at the first '/', '?' or '#' (RFC 3986 §3.2).
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        let authority = rest[..<authorityEnd], after = rest[authorityEnd...]
        let at = authority.lastIndex(of: UInt8(ascii: "@"))
        // An '@' past the authority while the authority has none: the user information held a
        // '/', '?' or '#' that ended the authority early (libpq would read a piece of the
        // password as the host). Two '@' in the authority: the user information holds one.
        if at == nil && after.contains(UInt8(ascii: "@")) { throw .unescapedUserInformation }
        var password: String?
        var hostPort = authority[...]
        if let at {
            let userInformation = authority[..<at]
            guard userInformation.allSatisfy(Self.isUserInformation), Self.percentDecoded(userInformation) != nil else {
                throw .unescapedUserInformation
            }
            if let colon = userInformation.firstIndex(of: UInt8(ascii: ":")) {
                password = Self.percentDecoded(userInformation[(colon + 1)...])
            }
            hostPort = authority[(at + 1)...]
        }
        guard Self.percentDecoded(hostPort) != nil, Self.percentDecoded(after) != nil else { throw .badPercentEscape }
        try Self.checkPorts(hostPort)
        if let attributes = Self.parameter("target_session_attrs", in: after), !["read-write", "primary"].contains(attributes) {
            throw .targetSessionAttributes
        }
        self.text = text
        self.password = password
        hostCount = hostPort.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).count
    }

    /// The value of query parameter `name` (percent-decoded; the last one when repeated) in the
    /// part of the URI after its authority.
    private static func parameter(_ name: String, in afterAuthority: ArraySlice<UInt8>) -> String? {
        guard let mark = afterAuthority.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        let query = afterAuthority[(mark + 1)...].prefix { $0 != UInt8(ascii: "#") }
        var found: String?
        for pair in query.split(separator: UInt8(ascii: "&")) {
            guard let equals = pair.firstIndex(of: UInt8(ascii: "=")),
                percentDecoded(pair[..<equals]) == name
            else { continue }
            found = percentDecoded(pair[(equals + 1)...])
        }
        return found
    }

    /// Whether `text` starts as a PostgreSQL URI (`postgres://` or `postgresql://`).
    public static func hasScheme(_ text: String) -> Bool { schemeEnd(Array(text.utf8)) != nil }

    private static func schemeEnd(_ bytes: [UInt8]) -> Int? {
        for scheme in ["postgresql://", "postgres://"] where bytes.starts(with: scheme.utf8) { return scheme.utf8.count }
        return nil
    }

    /// unreserved, sub-delims, ':' and '%' (escapes are checked apart): RFC 3986's userinfo.
    private static func isUserInformation(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:%".utf8.contains(byte)
        }
    }

    /// Each host's port, in a list of `host[:port]` or `[v6][:port]` separated by commas (libpq's
    /// multi-host form), is a number from 1 to 65535 when given.
    private static func checkPorts(_ hostPort: ArraySlice<UInt8>) throws(Problem) {
        for host in hostPort.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let afterBracket = host.lastIndex(of: UInt8(ascii: "]")).map { host[($0 + 1)...] } ?? host
            guard let colon = afterBracket.lastIndex(of: UInt8(ascii: ":")) else { continue }
            let digits = afterBracket[(colon + 1)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let port = Int(String(decoding: digits, as: UTF8.self)), (1...65535).contains(port)
            else { throw .port }
        }
    }

    /// `bytes` with its %XX escapes decoded, or nil when a '%' starts no escape or the result
    /// is not UTF-8.
    static func percentDecoded(_ bytes: some Collection<UInt8>) -> String? {
        var decoded: [UInt8] = []
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { decoded.append(byte); continue }
            guard let high = iterator.next().flatMap(hexDigitValue), let low = iterator.next().flatMap(hexDigitValue)
            else { return nil }
            decoded.append(high << 4 | low)
        }
        return String(validating: decoded, as: UTF8.self)
    }
}
