import Foundation
import Glibc
import InsightDomain
import InsightRedis
import Locking
import RedisClient
import RedisTesting
import Telemetry
import XCTest

/// One "instance": its own link (own connections, own metrics, own log) to a Redis server.
final class Instance: Sendable {
    let link: RedisLink
    let metrics = MetricsRegistry()
    let events = Locked<[RedisLinkEvent]>([])

    init(
        _ redis: TemporaryRedis, prefix: String, commandTimeout: Duration = .milliseconds(500),
        checkInterval: Duration = .milliseconds(100)
    ) throws {
        var settings = RedisLinkSettings(url: try RedisURL(redis.url))
        settings.keyPrefix = prefix
        settings.commandTimeout = commandTimeout
        settings.checkInterval = checkInterval
        let events = self.events
        link = RedisLink(settings: settings, metrics: metrics, log: { event in events.withLock { $0.append(event) } })
    }

    var logged: [RedisLinkEvent] { events.withLock { $0 } }

    /// The value of a sample line of `/metrics` (`name{labels} value`), nil when absent.
    func sample(_ series: String) -> Double? {
        for line in metrics.render().split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}

/// A key prefix of its own for each test on the shared server.
func uniquePrefix(_ name: String = #function) -> String {
    "t:\(name.prefix(40)):\(UInt64.random(in: 0...UInt64.max)):"
}

func caller(_ id: String, rate: Double = 10, burst: Int = 5) -> Caller {
    Caller(
        callerId: id, name: "test", environment: .production, roles: [.evaluate], rate: rate, burst: burst,
        createdAt: 0)
}

/// Polls `condition` every 20 ms for up to `seconds`.
func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// The server's process id (`INFO server`), to pause it with SIGSTOP.
func serverPid(_ redis: TemporaryRedis) throws -> pid_t {
    let info = try redis.connect().command("INFO", "server").string ?? ""
    for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("process_id:") {
        if let pid = pid_t(line.dropFirst("process_id:".count)) { return pid }
    }
    struct NoPid: Error {}
    throw NoPid()
}

/// A clock set far from the real one: decisions must not read it.
struct SkewedClock: InsightDomain.Clock {
    let offset: Milliseconds
    func now() -> Milliseconds { SystemClock().now() + offset }
}
