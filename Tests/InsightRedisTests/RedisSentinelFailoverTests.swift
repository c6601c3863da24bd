import Foundation
import InsightRedis
import Locking
import RedisClient
import RedisTesting
import Telemetry
import XCTest

/// The link follows the master Redis Sentinel names: a master, a replica and a sentinel as
/// processes, the master killed or failed over on purpose, and the link using the promoted
/// replica by itself.
final class RedisSentinelFailoverTests: XCTestCase {
    private struct Group {
        let master: TemporaryRedis
        let replica: TemporaryRedis
        let sentinel: TemporarySentinel
        let link: RedisLink
        let events: EventLog

        func write(_ key: String) -> Bool {
            link.perform { connection throws(RedisError) in try connection.command("SET", RedisArgument(key), "1") } == .status("OK")
        }
    }

    private final class EventLog: Sendable {
        private let events = Locked<[RedisLinkEvent]>([])
        func append(_ event: RedisLinkEvent) { events.withLock { $0.append(event) } }
        var all: [RedisLinkEvent] { events.withLock { $0 } }
    }

    private func group() throws -> Group {
        let master = try TemporaryRedis(password: "m-pw")
        let replica = try TemporaryRedis(password: "m-pw", replicaOf: master.port)
        let sentinel = try TemporarySentinel(
            monitoring: master.port, masterName: "cache", downAfterMilliseconds: 300,
            masterPassword: "m-pw")
        XCTAssertTrue(sentinel.waitForReplicas(1), "the sentinel learnt of the replica")
        var settings = RedisLinkSettings(endpoint: try RedisEndpoint("redis-sentinel://:m-pw@127.0.0.1:\(sentinel.port)/cache"))
        settings.checkInterval = .milliseconds(100)
        settings.commandTimeout = .milliseconds(500)
        let events = EventLog()
        let link = RedisLink(settings: settings, metrics: MetricsRegistry(), log: { events.append($0) })
        return Group(master: master, replica: replica, sentinel: sentinel, link: link, events: events)
    }

    func testTheLinkFollowsTheReplicaPromotedAfterTheMasterIsKilled() throws {
        let g = try group()
        g.link.start()
        defer { g.link.stop() }
        XCTAssertTrue(g.link.isAvailable)
        XCTAssertTrue(g.write("before"))

        g.master.kill()
        XCTAssertTrue(eventually(20) { (try? g.sentinel.masterPort()) == g.replica.port }, "the sentinel failed over")
        XCTAssertTrue(eventually(10) { g.link.isAvailable && g.write("after") }, "the link uses the promoted replica")
        XCTAssertTrue(
            g.events.all.contains(.masterChanged(to: "127.0.0.1:\(g.replica.port)", from: "127.0.0.1:\(g.master.port)")),
            "\(g.events.all)")
        let promoted = try g.replica.connect()
        XCTAssertEqual(try promoted.command("GET", "after"), .bulk(Array("1".utf8)), "written to the new master")
    }

    func testTheLinkLeavesAMasterDemotedWhileItStillAnswers() throws {
        let g = try group()
        g.link.start()
        defer { g.link.stop() }
        XCTAssertTrue(g.write("before"))

        // A failover on purpose: the old master lives on as a replica and refuses writes.
        // (The sentinel may not judge the replica fit to promote until it has read its INFO.)
        XCTAssertTrue(
            eventually(15) { (try? g.sentinel.connect().command("SENTINEL", "FAILOVER", "cache")) == .status("OK") },
            "the sentinel took the failover")
        XCTAssertTrue(eventually(20) { (try? g.sentinel.masterPort()) == g.replica.port }, "the sentinel failed over")
        XCTAssertTrue(
            eventually(10) { g.write("after") && (try? g.replica.connect().command("GET", "after")) == .bulk(Array("1".utf8)) },
            "the link writes to the promoted replica")
        XCTAssertTrue(
            g.events.all.contains(.masterChanged(to: "127.0.0.1:\(g.replica.port)", from: "127.0.0.1:\(g.master.port)")),
            "\(g.events.all)")
    }

    func testSentinelsOutOfReachLeaveTheMasterInUse() throws {
        let g = try group()
        g.link.start()
        defer { g.link.stop() }
        XCTAssertTrue(g.write("before"))
        g.sentinel.kill()
        Thread.sleep(forTimeInterval: 0.5)  // five checks, none of which reaches a sentinel
        XCTAssertTrue(g.link.isAvailable)
        XCTAssertTrue(g.write("after"), "the master in use still answers as one")
        XCTAssertEqual(g.events.all, [.available], "\(g.events.all)")
    }

    func testWithoutAnAnsweringSentinelTheUsersFallBack() throws {
        let master = try TemporaryRedis()
        let closed = try TemporaryRedis.freePort()
        var settings = RedisLinkSettings(endpoint: try RedisEndpoint("redis-sentinel://127.0.0.1:\(closed)/cache"))
        settings.checkInterval = .milliseconds(100)
        let events = EventLog()
        let link = RedisLink(settings: settings, metrics: MetricsRegistry(), log: { events.append($0) })
        link.start()
        defer { link.stop() }
        XCTAssertFalse(link.isAvailable)
        XCTAssertNil(link.perform { connection throws(RedisError) in try connection.command("PING") })
        guard case .unavailable(let reason)? = events.all.first else { return XCTFail("\(events.all)") }
        XCTAssertTrue(reason.contains("no Redis Sentinel answered"), reason)
        _ = master
    }
}
