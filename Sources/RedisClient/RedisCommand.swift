/// One argument of a command: bytes, sent binary-safe (with its length, never NUL-terminated).
public struct RedisArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The string's UTF-8 bytes.
    public init(_ string: String) { bytes = Array(string.utf8) }

    /// The integer in decimal, as Redis reads numbers.
    public init(_ value: some BinaryInteger) { bytes = Array(String(value).utf8) }

    public init(stringLiteral value: String) { self.init(value) }

    public init(integerLiteral value: Int64) { self.init(value) }
}

/// A command to send: its arguments, the command name first. A script command
/// (`RedisCommand.script`) is sent as EVALSHA and, when the server answers NOSCRIPT (its script
/// cache is empty after a restart or SCRIPT FLUSH), sent again as EVAL with the source.
public struct RedisCommand: Sendable, Hashable {
    public let arguments: [RedisArgument]
    /// The script behind an EVALSHA, for the EVAL fallback.
    let script: RedisScript?

    public init(_ arguments: [RedisArgument]) {
        precondition(!arguments.isEmpty, "a command has at least its name")
        self.arguments = arguments
        script = nil
    }

    public init(_ arguments: RedisArgument...) { self.init(arguments) }

    /// Runs `script` with `keys` (KEYS[1]…) and `arguments` (ARGV[1]…).
    public static func script(
        _ script: RedisScript, keys: [RedisArgument] = [],
        arguments: [RedisArgument] = []
    ) -> RedisCommand {
        RedisCommand(
            script: script,
            arguments: ["EVALSHA", RedisArgument(script.sha1), RedisArgument(keys.count)] + keys + arguments)
    }

    private init(script: RedisScript, arguments: [RedisArgument]) {
        self.arguments = arguments
        self.script = script
    }

    /// The EVAL form of a script command: the source in place of EVALSHA and the digest.
    var evalFallback: [RedisArgument]? {
        guard let script else { return nil }
        return ["EVAL", RedisArgument(script.source)] + arguments.dropFirst(2)
    }
}
