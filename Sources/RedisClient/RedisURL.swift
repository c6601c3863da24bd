/// Where a Redis server is and how to log in: `redis://[[user]:password@]host[:port][/db]`
/// (port 6379 and database 0 by default; user and password percent-decoded; an IPv6 address in
/// brackets). TLS (`rediss://`) is not supported.
public struct RedisURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// An ACL user; nil logs in as the default user.
    public var username: String?
    /// Sent with AUTH when set.
    public var password: String?
    /// Selected with SELECT when not 0.
    public var database: Int

    public init(
        host: String, port: Int = 6379, username: String? = nil, password: String? = nil,
        database: Int = 0
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
    }

    /// Parses `text`. Errors never quote it: it may hold a password.
    public init(_ text: String) throws(RedisError) {
        let scheme = "redis://"
        guard Self.hasScheme(scheme, text) else {
            if text.lowercased().hasPrefix("rediss://") {
                throw .invalidURL("TLS (rediss://) is not supported; reach Redis over a private network or a TLS tunnel")
            }
            throw .invalidURL("expected redis://[[user]:password@]host[:port][/db]")
        }
        var rest = Substring(text.dropFirst(scheme.count))

        // Credentials: everything before the last "@".
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            (username, password) = try Self.credentials(userinfo)
        }

        if rest.contains("?") || rest.contains("#") {
            throw .invalidURL("query and fragment are not supported")
        }

        // The database: the path, if any.
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !path.isEmpty {
                guard path.allSatisfy(\.isASCIIDigit), let number = Int(path) else {
                    throw .invalidURL("the path must be a database number")
                }
                database = number
            }
        }

        let (host, port) = try Self.hostAndPort(rest, defaultPort: 6379)
        self.init(host: host, port: port, username: username, password: password, database: database)
    }

    /// The URL with the password left out, for logs.
    public var description: String {
        let credentials = password == nil ? "" : "\(username ?? ""):***@"
        return "redis://\(credentials)\(Self.endpoint(host: host, port: port))/\(database)"
    }

    /// `user:password` or `:password` (no user), percent-decoded.
    static func credentials(_ userinfo: Substring) throws(RedisError) -> (username: String?, password: String?) {
        guard let colon = userinfo.firstIndex(of: ":") else {
            throw .invalidURL("credentials must be written user:password@ or :password@")
        }
        let user = try percentDecoded(userinfo[..<colon])
        return (user.isEmpty ? nil : user, try percentDecoded(userinfo[userinfo.index(after: colon)...]))
    }

    /// `host[:port]` or `[ipv6][:port]`, the port from 1 to 65535 (`defaultPort` when absent).
    static func hostAndPort(_ text: Substring, defaultPort: Int) throws(RedisError) -> (host: String, port: Int) {
        let host: Substring
        let portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .invalidURL("unclosed [ in the host") }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw .invalidURL("expected :port after the host") }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = text
            portText = nil
        }
        guard !host.isEmpty else { throw .invalidURL("the host is missing") }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit),
                let number = Int(portText), (1...65535).contains(number)
            else {
                throw .invalidURL("the port must be a number from 1 to 65535")
            }
            port = number
        }
        return (String(host), port)
    }

    /// `host:port`, an IPv6 address in brackets: how logs and errors name a server.
    static func endpoint(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    static func hasScheme(_ scheme: String, _ text: String) -> Bool {
        text.utf8.count > scheme.utf8.count
            && text.utf8.prefix(scheme.utf8.count).elementsEqual(scheme.utf8, by: equalIgnoringCase)
    }

    private static func equalIgnoringCase(_ a: UInt8, _ b: UInt8) -> Bool {
        (a | 0x20) == (b | 0x20)
    }

    static func percentDecoded(_ text: Substring) throws(RedisError) -> String {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw .invalidURL("a % in the credentials is not followed by two hex digits")
            }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
