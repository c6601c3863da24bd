import Foundation
import RedisClient
import RedisTesting
import XCTest

/// `RedisConnection` against a real redis-server (`TemporaryRedis`): the shared one for most
/// tests, a private one for those that stop it or change its configuration.
final class RedisConnectionTests: XCTestCase {
    private var redis: TemporaryRedis!
    private var connection: RedisConnection!
    /// A prefix of this test's own keys on the shared server.
    private var prefix = ""

    override func setUpWithError() throws {
        redis = try TemporaryRedis.shared()
        connection = try redis.connect()
        prefix = "test:\(UUID().uuidString):"
    }

    override func tearDown() {
        connection = nil
        redis = nil
    }

    private func key(_ name: String) -> RedisArgument { RedisArgument(prefix + name) }

    func testConnectingToAClosedPortFailsClearly() throws {
        let port = try TemporaryRedis.freePort()
        XCTAssertThrowsError(try RedisConnection(url: "redis://127.0.0.1:\(port)")) { error in
            guard case RedisError.connectFailed(let reason) = error else {
                return XCTFail("expected connectFailed, got \(error)")
            }
            XCTAssertTrue(reason.hasPrefix("127.0.0.1:\(port): "), reason)
            XCTAssertTrue(reason.contains("refused"), reason)
            XCTAssertEqual("\(error)", "cannot connect to Redis at \(reason)")
        }
    }

    func testBinaryValuesRoundTripWithEveryByte() throws {
        let everyByte = (0...255).map { UInt8($0) }
        let value = everyByte + everyByte.reversed()
        let binaryKey = RedisArgument(Array(prefix.utf8) + [0, 13, 10, 255, 0])
        XCTAssertEqual(try connection.command("SET", binaryKey, RedisArgument(value)), .status("OK"))
        XCTAssertEqual(try connection.command("GET", binaryKey), .bulk(value))
        XCTAssertEqual(try connection.command("STRLEN", binaryKey), .integer(512))
        // The key ends at its length, not at its first NUL: the prefix alone names nothing.
        XCTAssertEqual(try connection.command("EXISTS", RedisArgument(Array(prefix.utf8))), .integer(0))
        XCTAssertEqual(try connection.command("SET", key("empty"), RedisArgument([])), .status("OK"))
        XCTAssertEqual(try connection.command("GET", key("empty")), .bulk([]))
    }

    func testEveryReplyTypeIsDecoded() throws {
        XCTAssertEqual(try connection.command("PING"), .status("PONG"))
        XCTAssertEqual(try connection.command("INCRBY", key("n"), -5), .integer(-5))
        XCTAssertEqual(
            try connection.command("INCRBY", key("n"), RedisArgument(Int64.max)),
            .integer(Int64.max - 5))
        XCTAssertEqual(try connection.command("SET", key("s"), "héllo"), .status("OK"))
        XCTAssertEqual(try connection.command("GET", key("s")).string, "héllo")
        XCTAssertEqual(try connection.command("GET", key("missing")), .null)
        XCTAssertEqual(try connection.command("LRANGE", key("missing"), 0, -1), .array([]))
        // A blocking pop that times out answers the null array.
        XCTAssertEqual(try connection.command("BLPOP", key("missing"), "0.01"), .null)
        // A transaction's replies: nested, an error among them in its place.
        XCTAssertEqual(try connection.command("RPUSH", key("l"), "a", "b"), .integer(2))
        XCTAssertEqual(try connection.command("MULTI"), .status("OK"))
        XCTAssertEqual(try connection.command("INCR", key("s")), .status("QUEUED"))
        XCTAssertEqual(try connection.command("LRANGE", key("l"), 0, -1), .status("QUEUED"))
        XCTAssertEqual(try connection.command("GET", key("missing")), .status("QUEUED"))
        XCTAssertEqual(
            try connection.command("EXEC"),
            .array([
                .error("ERR value is not an integer or out of range"),
                .array([.bulk(Array("a".utf8)), .bulk(Array("b".utf8))]),
                .null
            ]))
    }

    func testAnErrorReplyThrowsItsTextAndTheConnectionGoesOn() throws {
        XCTAssertEqual(try connection.command("SET", key("s"), "text"), .status("OK"))
        XCTAssertThrowsError(try connection.command("INCR", key("s"))) { error in
            XCTAssertEqual(error as? RedisError, .server("ERR value is not an integer or out of range"))
        }
        XCTAssertThrowsError(try connection.command("LPUSH", key("s"), "x")) { error in
            guard case RedisError.server(let text) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(text.hasPrefix("WRONGTYPE "), text)
        }
        XCTAssertTrue(connection.isConnected)
        XCTAssertEqual(try connection.command("PING"), .status("PONG"))
    }

    func testAPipelineIsOneRoundTripAndKeepsTheOrder() throws {
        let count = 100
        let commands =
            (0..<count).map { _ in RedisCommand("INCR", key("counter")) }
            + [RedisCommand("INCR", "not", "an", "arity"), RedisCommand("GET", key("counter"))]
        let reads = try ReadEvents(redis)
        let replies = try connection.pipeline(commands)
        let pipelinedReads = try reads.sinceLast()

        XCTAssertEqual(replies.count, count + 2)
        XCTAssertEqual(Array(replies.prefix(count)), (1...count).map { .integer(Int64($0)) })
        guard case .error(let text) = replies[count] else { return XCTFail("\(replies[count])") }
        XCTAssertTrue(text.hasPrefix("ERR wrong number of arguments"), text)
        XCTAssertEqual(replies[count + 1].string, "\(count)")

        // The server read the whole batch in one go (a few reads at most, as TCP delivers it);
        // the same commands sent one by one cost a read each.
        XCTAssertLessThanOrEqual(pipelinedReads, 3, "the batch took \(pipelinedReads) reads on the server")
        for command in commands.prefix(count) { _ = try connection.command(command) }
        XCTAssertGreaterThanOrEqual(try reads.sinceLast(), count)
    }

    func testServerTimeIsTheServersClockInMicroseconds() throws {
        let before = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let first = try connection.serverTime()
        let second = try connection.serverTime()
        let after = Int64(Date().timeIntervalSince1970 * 1_000_000)
        // The server runs on this machine: its clock agrees with ours.
        XCTAssertGreaterThanOrEqual(first, before - 1_000_000)
        XCTAssertLessThanOrEqual(second, after + 1_000_000)
        XCTAssertGreaterThanOrEqual(second, first)
    }

    func testATimedOutCommandFailsWithinTheTimeoutAndClosesTheConnection() throws {
        let impatient = try redis.connect(commandTimeout: .milliseconds(300))
        let start = ContinuousClock.now
        // The server would answer after 5 s (a blocking pop on an empty list).
        XCTAssertThrowsError(try impatient.command("BLPOP", key("empty"), 5)) { error in
            XCTAssertEqual(error as? RedisError, .timeout)
        }
        let waited = ContinuousClock.now - start
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(250))
        XCTAssertLessThan(waited, .seconds(3))
        XCTAssertFalse(impatient.isConnected)
        XCTAssertThrowsError(try impatient.command("PING")) { error in
            XCTAssertEqual(error as? RedisError, .notConnected)
        }
        try impatient.reconnect()
        XCTAssertEqual(try impatient.command("PING"), .status("PONG"))
    }

    func testAStoppedServerIsAClearErrorAndReconnectWorksWhenItIsBack() throws {
        let own = try TemporaryRedis()
        let connection = try own.connect()
        XCTAssertEqual(try connection.command("SET", "k", "v"), .status("OK"))

        own.stop()
        XCTAssertThrowsError(try connection.command("GET", "k")) { error in
            guard case RedisError.connectionLost = error else { return XCTFail("expected connectionLost, got \(error)") }
        }
        XCTAssertFalse(connection.isConnected)
        XCTAssertThrowsError(try connection.command("GET", "k")) { error in
            XCTAssertEqual(error as? RedisError, .notConnected)
        }
        XCTAssertThrowsError(try connection.reconnect()) { error in
            guard case RedisError.connectFailed(let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("refused"), reason)
        }

        try own.start()
        try connection.reconnect()
        XCTAssertTrue(connection.isConnected)
        // A new server on the same port, without persistence: the old data is gone.
        XCTAssertEqual(try connection.command("GET", "k"), .null)

        // Killed rather than stopped: the same.
        own.kill()
        XCTAssertThrowsError(try connection.command("PING")) { error in
            guard case RedisError.connectionLost = error else { return XCTFail("expected connectionLost, got \(error)") }
        }
        try own.start()
        try connection.reconnect()
        XCTAssertEqual(try connection.command("PING"), .status("PONG"))
    }

    func testAPasswordAndDatabaseFromTheURLAreUsed() throws {
        let password = "pa:ss@w/rd %"
        let own = try TemporaryRedis(password: password)
        let connection = try RedisConnection(url: own.url + "/3")
        XCTAssertEqual(try connection.command("PING"), .status("PONG"))
        let info = try XCTUnwrap(try connection.command("CLIENT", "INFO").string)
        XCTAssertTrue(info.contains(" db=3 "), info)

        let wrong = "not-the-password"
        XCTAssertThrowsError(try RedisConnection(url: "redis://:\(wrong)@127.0.0.1:\(own.port)")) { error in
            guard case RedisError.authenticationFailed(let text) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(text.hasPrefix("WRONGPASS"), text)
            XCTAssertFalse("\(error)".contains(wrong), "\(error)")
        }
        // Without a password the connection opens, and the first command is refused.
        let anonymous = try RedisConnection(url: "redis://127.0.0.1:\(own.port)")
        XCTAssertThrowsError(try anonymous.command("GET", "k")) { error in
            guard case RedisError.server(let text) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(text.hasPrefix("NOAUTH"), text)
        }
    }
}

/// The server's count of socket reads (`total_reads_processed`), read from a connection of its
/// own: how many times the server read from its clients since the last look, less this look's
/// own INFO command.
private final class ReadEvents {
    private let observer: RedisConnection
    private var last: Int

    init(_ redis: TemporaryRedis) throws {
        observer = try redis.connect()
        last = 0
        last = try count()
    }

    func sinceLast() throws -> Int {
        let now = try count()
        defer { last = now }
        return now - last - 1
    }

    private func count() throws -> Int {
        let info = try XCTUnwrap(try observer.command("INFO", "stats").string)
        let line = try XCTUnwrap(
            info.split(whereSeparator: \.isNewline)
                .first { $0.hasPrefix("total_reads_processed:") })
        return try XCTUnwrap(Int(line.split(separator: ":")[1]))
    }
}
