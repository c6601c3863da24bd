import Foundation
import RedisClient
import RedisTesting
import XCTest

final class RedisScriptTests: XCTestCase {
    /// A GCRA bucket in the shape the rate limiter needs: one atomic update on the server, with
    /// the server's clock. KEYS[1] the bucket; ARGV[1] the emission interval and ARGV[2] the
    /// burst, in microseconds. Answers {1, tat} when the request fits, {0, tat} when it does not.
    static let gcra = RedisScript(
        """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        local interval = tonumber(ARGV[1])
        local burst = tonumber(ARGV[2])
        local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or now), now)
        local next = tat + interval
        if next - now > burst then return {0, tat} end
        redis.call('SET', KEYS[1], next, 'PX', math.ceil((next - now) / 1000))
        return {1, next}
        """)

    private var connection: RedisConnection!

    override func setUpWithError() throws {
        connection = try TemporaryRedis.shared().connect()
    }

    override func tearDown() { connection = nil }

    func testTheDigestIsTheOneTheServerComputes() throws {
        XCTAssertEqual(RedisScript("abc").sha1, "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(RedisScript("").sha1, "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        // Lengths around the 64-byte block and its 8-byte length field, and non-ASCII text.
        let sources =
            [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000].map { "return '\(String(repeating: "x", count: $0))'" }
            + [Self.gcra.source, "return 'héllo ✓'"]
        for source in sources {
            let loaded = try connection.command("SCRIPT", "LOAD", RedisArgument(source)).string
            XCTAssertEqual(RedisScript(source).sha1, loaded, "\(source.utf8.count) bytes")
        }
    }

    func testAScriptRunsByDigestAndAgainAfterTheCacheIsFlushed() throws {
        let bucket = RedisArgument("gcra:\(UUID().uuidString)")
        // One request a minute, a burst of five: the sixth request at once does not fit.
        let perMinute: [RedisArgument] = [60_000_000, 300_000_000]
        _ = try connection.command("SCRIPT", "LOAD", RedisArgument(Self.gcra.source))
        let calls = try ScriptCalls(connection)
        var allowed: [Int64] = []
        for _ in 0..<6 {
            let reply = try connection.run(Self.gcra, keys: [bucket], arguments: perMinute)
            allowed.append(try XCTUnwrap(reply.elements?.first?.integer))
        }
        XCTAssertEqual(allowed, [1, 1, 1, 1, 1, 0])
        XCTAssertEqual(try calls.sinceLast(), ScriptCalls.Counts(evalsha: 6, eval: 0))

        // The cache emptied, as after a server restart: the first run falls back to EVAL, which
        // caches the script again, and later runs go by digest.
        XCTAssertEqual(try connection.command("SCRIPT", "FLUSH"), .status("OK"))
        XCTAssertEqual(try connection.command("SCRIPT", "EXISTS", RedisArgument(Self.gcra.sha1)), .array([.integer(0)]))
        let other = RedisArgument("gcra:\(UUID().uuidString)")
        XCTAssertEqual(try connection.run(Self.gcra, keys: [other], arguments: perMinute).elements?.first, .integer(1))
        XCTAssertEqual(try connection.run(Self.gcra, keys: [bucket], arguments: perMinute).elements?.first, .integer(0))
        XCTAssertEqual(try calls.sinceLast(), ScriptCalls.Counts(evalsha: 2, eval: 1))
        XCTAssertEqual(try connection.command("SCRIPT", "EXISTS", RedisArgument(Self.gcra.sha1)), .array([.integer(1)]))
    }

    func testScriptsInAPipelineFallBackInTheirPlaces() throws {
        let echo = RedisScript("return {KEYS[1], ARGV[1], '\(UUID().uuidString)'}")
        let counter = RedisArgument("counter:\(UUID().uuidString)")
        XCTAssertEqual(try connection.command("SCRIPT", "FLUSH"), .status("OK"))
        let replies = try connection.pipeline([
            .script(echo, keys: ["k1"], arguments: ["a1"]),
            RedisCommand("INCR", counter),
            .script(echo, keys: ["k2"], arguments: [RedisArgument([0, 255])])
        ])
        XCTAssertEqual(replies.count, 3)
        XCTAssertEqual(replies[0].elements?.prefix(2), [.bulk(Array("k1".utf8)), .bulk(Array("a1".utf8))])
        XCTAssertEqual(replies[1], .integer(1))
        XCTAssertEqual(replies[2].elements?.prefix(2), [.bulk(Array("k2".utf8)), .bulk([0, 255])])
    }

    func testAScriptsOwnErrorIsThrownWithItsText() throws {
        let failing = RedisScript("return redis.error_reply('LIMIT over budget')")
        XCTAssertThrowsError(try connection.run(failing)) { error in
            XCTAssertEqual(error as? RedisError, .server("LIMIT over budget"))
        }
    }
}

/// How many times the server ran EVALSHA and EVAL (`INFO commandstats`) since the last look.
private final class ScriptCalls {
    struct Counts: Equatable { var evalsha: Int; var eval: Int }
    private let connection: RedisConnection
    private var last = Counts(evalsha: 0, eval: 0)

    init(_ connection: RedisConnection) throws {
        self.connection = connection
        last = try counts()
    }

    func sinceLast() throws -> Counts {
        let now = try counts()
        defer { last = now }
        return Counts(evalsha: now.evalsha - last.evalsha, eval: now.eval - last.eval)
    }

    private func counts() throws -> Counts {
        let info = try XCTUnwrap(try connection.command("INFO", "commandstats").string)
        func calls(_ name: String) -> Int {
            // cmdstat_evalsha:calls=6,usec=…,… ; SCRIPT FLUSH resets neither.
            guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(name):") }),
                let field = line.split(separator: ":")[1].split(separator: ",").first,
                let value = Int(field.dropFirst("calls=".count))
            else { return 0 }
            return value
        }
        return Counts(evalsha: calls("evalsha"), eval: calls("eval"))
    }
}
