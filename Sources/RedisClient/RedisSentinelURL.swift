/// Where Redis Sentinel is and which master it watches:
/// `redis-sentinel://[[user]:password@]host1[:port1][,host2[:port2]…]/MASTER[?sentinel_password=…]`.
///
/// The sentinels (port 26379 by default) are asked where the master named `MASTER` is; the user
/// and password of the URL are the master's (sent with AUTH to whichever server is the master).
/// When the sentinels have a password of their own (`requirepass` in sentinel.conf), it is given
/// as `sentinel_password` (and an ACL user as `sentinel_username`). Everything is percent-decoded;
/// a password holding `/ ? # @ , %` must be written percent-encoded. Database 0, no TLS.
public struct RedisSentinelURL: Sendable, Equatable, CustomStringConvertible {
    /// The sentinels, in the order they are asked.
    public var sentinels: [RedisAddress]
    /// The name the sentinels monitor the master by (`sentinel monitor NAME …`).
    public var masterName: String
    /// The master's ACL user and password (the replicas, once promoted, take the same).
    public var username: String?
    public var password: String?
    /// The sentinels' own ACL user and password, when they ask for one.
    public var sentinelUsername: String?
    public var sentinelPassword: String?

    public init(
        sentinels: [RedisAddress], masterName: String, username: String? = nil,
        password: String? = nil, sentinelUsername: String? = nil, sentinelPassword: String? = nil
    ) {
        precondition(!sentinels.isEmpty, "at least one sentinel")
        self.sentinels = sentinels
        self.masterName = masterName
        self.username = username
        self.password = password
        self.sentinelUsername = sentinelUsername
        self.sentinelPassword = sentinelPassword
    }

    /// The scheme that names sentinels rather than a server.
    public static let scheme = "redis-sentinel://"
    /// The port of a sentinel the URL gives without one.
    public static let defaultPort = 26379

    /// Parses `text`. Errors never quote it: it may hold passwords.
    public init(_ text: String) throws(RedisError) {
        let usage = "expected redis-sentinel://[[user]:password@]host1:26379,host2:26379,…/MASTER"
        guard RedisURL.hasScheme(Self.scheme, text) else { throw .invalidURL(usage) }
        let rest = Substring(text.dropFirst(Self.scheme.count))
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let afterAuthority = rest[authorityEnd...]
        if afterAuthority.contains("@") {
            throw .invalidURL("a password holding / ? # or @ must be percent-encoded (%2F %3F %23 %40)")
        }

        var username: String?
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            (username, password) = try RedisURL.credentials(authority[..<at])
            authority = authority[authority.index(after: at)...]
        }
        var sentinels: [RedisAddress] = []
        for part in authority.split(separator: ",", omittingEmptySubsequences: false) {
            guard !part.isEmpty else { throw .invalidURL("a sentinel between commas is missing") }
            let (host, port) = try RedisURL.hostAndPort(part, defaultPort: Self.defaultPort)
            sentinels.append(RedisAddress(host: host, port: port))
        }
        guard !sentinels.isEmpty else { throw .invalidURL("no sentinel: \(usage)") }

        if afterAuthority.contains("#") { throw .invalidURL("a fragment is not supported") }
        var path = afterAuthority
        var query: Substring = ""
        if let mark = afterAuthority.firstIndex(of: "?") {
            path = afterAuthority[..<mark]
            query = afterAuthority[afterAuthority.index(after: mark)...]
        }
        guard path.hasPrefix("/") else { throw .invalidURL("the master's name is missing: \(usage)") }
        let name = try RedisURL.percentDecoded(path.dropFirst())
        guard !name.isEmpty, !name.contains("/"),
            name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw .invalidURL("the master's name must be one path segment of visible ASCII characters: \(usage)")
        }

        var sentinelUsername: String?
        var sentinelPassword: String?
        for pair in query.split(separator: "&") {
            guard let equals = pair.firstIndex(of: "=") else {
                throw .invalidURL("a query parameter without a value (sentinel_password=…, sentinel_username=…)")
            }
            let value = try RedisURL.percentDecoded(pair[pair.index(after: equals)...])
            switch pair[..<equals] {
            case "sentinel_password": sentinelPassword = value
            case "sentinel_username": sentinelUsername = value.isEmpty ? nil : value
            default: throw .invalidURL("unknown query parameter (only sentinel_password and sentinel_username are read)")
            }
        }
        self.init(
            sentinels: sentinels, masterName: name, username: username, password: password,
            sentinelUsername: sentinelUsername, sentinelPassword: sentinelPassword)
    }

    /// The master at `address`, with the URL's credentials for it.
    public func master(at address: RedisAddress) -> RedisURL {
        RedisURL(host: address.host, port: address.port, username: username, password: password)
    }

    /// The URL of sentinel `index`, with the sentinels' credentials.
    public func sentinel(_ index: Int) -> RedisURL {
        RedisURL(
            host: sentinels[index].host, port: sentinels[index].port, username: sentinelUsername,
            password: sentinelPassword)
    }

    /// The URL with the passwords left out, for logs.
    public var description: String {
        let credentials = password == nil ? "" : "\(username ?? ""):***@"
        let hosts = sentinels.map(\.description).joined(separator: ",")
        var query: [String] = []
        if let sentinelUsername { query.append("sentinel_username=\(sentinelUsername)") }
        if sentinelPassword != nil { query.append("sentinel_password=***") }
        return "\(Self.scheme)\(credentials)\(hosts)/\(masterName)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }
}

/// A server's host and port.
public struct RedisAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`, an IPv6 address in brackets.
    public var description: String { RedisURL.endpoint(host: host, port: port) }
}
