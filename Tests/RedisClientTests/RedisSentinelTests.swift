import RedisClient
import RedisTesting
import XCTest

final class RedisSentinelURLTests: XCTestCase {
    func testTheFormsOfTheURL() throws {
        let plain = try RedisSentinelURL("redis-sentinel://s1,s2:26380,[fd00::7]/mymaster")
        XCTAssertEqual(
            plain.sentinels,
            [
                RedisAddress(host: "s1", port: 26379), RedisAddress(host: "s2", port: 26380),
                RedisAddress(host: "fd00::7", port: 26379)
            ])
        XCTAssertEqual(plain.masterName, "mymaster")
        XCTAssertNil(plain.password)
        XCTAssertNil(plain.sentinelPassword)

        let secured = try RedisSentinelURL(
            "REDIS-SENTINEL://insightd:p%40ss%2Fw%3Frd@10.0.0.5:26379/cache?sentinel_password=s%26p&sentinel_username=watch")
        XCTAssertEqual(
            secured,
            RedisSentinelURL(
                sentinels: [RedisAddress(host: "10.0.0.5", port: 26379)], masterName: "cache",
                username: "insightd", password: "p@ss/w?rd",
                sentinelUsername: "watch", sentinelPassword: "s&p"))
        XCTAssertEqual(
            secured.master(at: RedisAddress(host: "10.0.0.9", port: 6380)),
            RedisURL(host: "10.0.0.9", port: 6380, username: "insightd", password: "p@ss/w?rd"))
        XCTAssertEqual(secured.sentinel(0), RedisURL(host: "10.0.0.5", port: 26379, username: "watch", password: "s&p"))
        XCTAssertEqual(try RedisSentinelURL("redis-sentinel://:pw@h/m").password, "pw")
    }

    func testTheEndpointIsChosenByTheScheme() throws {
        XCTAssertEqual(try RedisEndpoint("redis://cache:6380"), .server(RedisURL(host: "cache", port: 6380)))
        XCTAssertEqual(
            try RedisEndpoint("redis-sentinel://a:1,b:2/m"),
            .sentinels(
                RedisSentinelURL(
                    sentinels: [RedisAddress(host: "a", port: 1), RedisAddress(host: "b", port: 2)],
                    masterName: "m")))
        XCTAssertThrowsError(try RedisEndpoint("rediss://cache"))
    }

    func testTheDescriptionLeavesThePasswordsOut() throws {
        let url = try RedisSentinelURL("redis-sentinel://u:hunter2@a:1,[::1]:2/m?sentinel_password=hunter3")
        XCTAssertEqual("\(url)", "redis-sentinel://u:***@a:1,[::1]:2/m?sentinel_password=***")
        XCTAssertEqual("\(try RedisEndpoint("redis-sentinel://a/m"))", "redis-sentinel://a:26379/m")
    }

    func testABadURLIsRefusedWithoutQuotingIt() {
        let bad = [
            "redis-sentinel://", "redis-sentinel://:hunter2@", "redis-sentinel://:hunter2@a,b",
            "redis-sentinel://:hunter2@a,b/", "redis-sentinel://:hunter2@a,,b/m", "redis-sentinel://:hunter2@a,/m",
            "redis-sentinel://:hunter2@a:0/m", "redis-sentinel://:hunter2@a:99999/m", "redis-sentinel://:hunter2@a/m/0",
            "redis-sentinel://:hunter2@a/m?timeout=1", "redis-sentinel://:hunter2@a/m?sentinel_password",
            "redis-sentinel://:hunter2@a/m#frag", "redis-sentinel://:hunt/er2@a/m", "redis-sentinel://:hunter2%zz@a/m",
            "redis-sentinel://a/m?sentinel_password=hunter2%z", "redis-sentinel://hunter2@a/m", "redis-sentinel://:hunter2@a/m%20x"
        ]
        for text in bad {
            XCTAssertThrowsError(try RedisEndpoint(text), text) { error in
                XCTAssertFalse("\(error)".contains("hunter2"), "\(text): \(error)")
                XCTAssertFalse("\(error)".contains("hunt"), "\(text): \(error)")
            }
        }
    }
}

final class RedisSentinelReplyTests: XCTestCase {
    func testTheMastersAddressIsReadFromTheReply() throws {
        XCTAssertEqual(
            try RedisSentinelURL.masterAddress(in: .array([.bulk(Array("10.0.0.5".utf8)), .bulk(Array("6380".utf8))])),
            RedisAddress(host: "10.0.0.5", port: 6380))
        XCTAssertNil(try RedisSentinelURL.masterAddress(in: .null), "no master of that name")
        for malformed: RedisReply in [
            .array([]), .array([.bulk(Array("h".utf8))]), .array([.bulk([]), .bulk(Array("1".utf8))]),
            .array([.bulk(Array("h".utf8)), .bulk(Array("0".utf8))]),
            .array([.bulk(Array("h".utf8)), .bulk(Array("port".utf8))]), .integer(1), .status("OK")
        ] {
            XCTAssertThrowsError(try RedisSentinelURL.masterAddress(in: malformed), "\(malformed)") { error in
                guard case RedisError.protocolError = error else { return XCTFail("\(error)") }
            }
        }
    }

    func testOnlyAMasterPassesTheRoleCheck() throws {
        XCTAssertTrue(try RedisConnection.isMasterRole(.array([.bulk(Array("master".utf8)), .integer(0), .array([])])))
        XCTAssertFalse(
            try RedisConnection.isMasterRole(
                .array([
                    .bulk(Array("slave".utf8)), .bulk(Array("127.0.0.1".utf8)),
                    .integer(6379), .bulk(Array("connected".utf8)), .integer(0)
                ])))
        XCTAssertFalse(try RedisConnection.isMasterRole(.array([.bulk(Array("sentinel".utf8)), .array([])])))
        XCTAssertThrowsError(try RedisConnection.isMasterRole(.array([])))
        XCTAssertThrowsError(try RedisConnection.isMasterRole(.null))
    }
}

/// The sentinels asked for real: a master, a replica and a sentinel watching them, as processes.
final class RedisSentinelLocateTests: XCTestCase {
    func testTheSentinelNamesTheMasterWithItsCredentials() throws {
        let master = try TemporaryRedis(password: "m-pw")
        let replica = try TemporaryRedis(password: "m-pw", replicaOf: master.port)
        let sentinel = try TemporarySentinel(
            monitoring: master.port, masterName: "cache", masterPassword: "m-pw",
            password: "s-pw")
        let closed = try TemporaryRedis.freePort()
        let url = try RedisSentinelURL("redis-sentinel://:m-pw@127.0.0.1:\(closed),127.0.0.1:\(sentinel.port)/cache?sentinel_password=s-pw")

        // The first sentinel does not answer: the second does, and is asked first next time.
        let (located, answered) = try url.locateMaster(connectTimeout: .seconds(1), commandTimeout: .seconds(1))
        XCTAssertEqual(located, RedisURL(host: "127.0.0.1", port: master.port, password: "m-pw"))
        XCTAssertEqual(answered, 1)
        let connection = try RedisConnection(url: located)
        XCTAssertNoThrow(try connection.requireMaster())

        let replicaConnection = try RedisConnection(url: RedisURL(host: "127.0.0.1", port: replica.port, password: "m-pw"))
        XCTAssertThrowsError(try replicaConnection.requireMaster()) { error in
            XCTAssertEqual(error as? RedisError, .notMaster("127.0.0.1:\(replica.port)"))
        }
    }

    func testAnUnknownMasterAndSilentSentinelsAreToldApart() throws {
        let master = try TemporaryRedis()
        let sentinel = try TemporarySentinel(monitoring: master.port, masterName: "cache")
        let unknown = try RedisSentinelURL("redis-sentinel://127.0.0.1:\(sentinel.port)/other")
        XCTAssertThrowsError(try unknown.locateMaster(connectTimeout: .seconds(1), commandTimeout: .seconds(1))) { error in
            XCTAssertEqual(error as? RedisError, .unknownMaster("other"))
            XCTAssertEqual("\(error)", "the sentinels know no master named other")
        }
        let closed = try TemporaryRedis.freePort()
        let silent = try RedisSentinelURL("redis-sentinel://:hunter2@127.0.0.1:\(closed)/cache")
        XCTAssertThrowsError(try silent.locateMaster(connectTimeout: .seconds(1), commandTimeout: .seconds(1))) { error in
            guard case RedisError.noSentinel(let reasons) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reasons.contains("127.0.0.1:\(closed)"), reasons)
            XCTAssertFalse("\(error)".contains("hunter2"))
        }
        // A sentinel with a password of its own refuses a client without it.
        let guarded = try TemporarySentinel(monitoring: master.port, masterName: "cache", password: "s-pw")
        let withoutPassword = try RedisSentinelURL("redis-sentinel://127.0.0.1:\(guarded.port)/cache")
        XCTAssertThrowsError(try withoutPassword.locateMaster(connectTimeout: .seconds(1), commandTimeout: .seconds(1))) { error in
            guard case RedisError.noSentinel = error else { return XCTFail("\(error)") }
        }
    }
}
