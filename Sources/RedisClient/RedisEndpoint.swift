/// How an instance finds its Redis: one server (`redis://`), or the master a set of sentinels
/// watches (`redis-sentinel://`), which moves when they fail it over.
public enum RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    case server(RedisURL)
    case sentinels(RedisSentinelURL)

    /// Parses `text` by its scheme. Errors never quote it: it may hold passwords.
    public init(_ text: String) throws(RedisError) {
        if RedisURL.hasScheme(RedisSentinelURL.scheme, text) {
            self = .sentinels(try RedisSentinelURL(text))
        } else {
            self = .server(try RedisURL(text))
        }
    }

    /// The URL with the passwords left out, for logs.
    public var description: String {
        switch self {
        case .server(let url): "\(url)"
        case .sentinels(let url): "\(url)"
        }
    }
}
