/// One reply of the Redis protocol (RESP2), decoded.
public enum RedisReply: Sendable, Equatable {
    /// A simple string (`+OK`, `+PONG`, `+QUEUED`).
    case status(String)
    /// An error reply (`-ERR …`), as an element of a pipeline's or a transaction's replies.
    /// `RedisConnection.command` throws `RedisError.server` instead of returning one.
    case error(String)
    /// An integer (`:42`).
    case integer(Int64)
    /// A bulk string: bytes, binary-safe.
    case bulk([UInt8])
    /// The null bulk string or null array (`$-1`, `*-1`): a missing key, a timed-out blocking pop.
    case null
    /// An array (`*n`) of replies, nested as the server sent them.
    case array([RedisReply])

    /// The integer of an `.integer` reply.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The bytes of a `.bulk` reply.
    public var bytes: [UInt8]? {
        if case .bulk(let value) = self { return value }
        return nil
    }

    /// The text of a `.bulk` or `.status` reply (UTF-8; invalid sequences replaced).
    public var string: String? {
        switch self {
        case .bulk(let value): String(decoding: value, as: UTF8.self)
        case .status(let value): value
        default: nil
        }
    }

    /// The elements of an `.array` reply.
    public var elements: [RedisReply]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// True for the null reply.
    public var isNull: Bool { self == .null }
}
