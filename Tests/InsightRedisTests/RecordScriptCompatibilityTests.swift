import Foundation
import InsightDomain
@testable import InsightRedis
import InsightTesting
import RedisClient
import RedisTesting
import XCTest

/// What the record script writes, pinned: during a rolling upgrade old and new instances record
/// into one Redis, and the erase script and the read paths read what either wrote. So the current
/// `VelocityScripts.record` must write what the script of the first multi-instance release
/// (kept here as the reference) wrote, byte for byte: the same keys, members, scores, expiries,
/// notes and coached hashes, and the same answers, whichever of the two records each evaluation.
final class RecordScriptCompatibilityTests: XCTestCase {
    var redis: TemporaryRedis!

    override func setUpWithError() throws { redis = try TemporaryRedis.shared() }

    /// The record script as the first multi-instance release ran it (its prelude included).
    static let reference = RedisScript(
        """
        local now
        do
          local t = redis.call('TIME')
          now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        local function hex(b)
          return (string.gsub(b, '.', function(c) return string.format('%02x', string.byte(c)) end))
        end

        local week = tonumber(ARGV[11])
        local t = tonumber(ARGV[1])
        if now - t >= week then return 0 end
        local cut = now - week
        local flags = tonumber(ARGV[2])
        local device, counterparty, account = ARGV[3], ARGV[4], ARGV[5]

        -- Trims a set to its newest `cap` members, and answers the members it dropped.
        local function trim(key, cap)
          local extra = redis.call('ZCARD', key) - cap
          if extra <= 0 then return {} end
          local dropped = redis.call('ZRANGE', key, 0, extra - 1)
          redis.call('ZREMRANGEBYRANK', key, 0, extra - 1)
          return dropped
        end
        local function expire_with_newest(key, also)
          local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
          if newest[2] then
            redis.call('PEXPIREAT', key, tonumber(newest[2]) + week)
            if also then redis.call('PEXPIREAT', also, tonumber(newest[2]) + week) end
          end
        end

        -- The account's own history.
        local akey = KEYS[1]
        redis.call('ZREMRANGEBYSCORE', akey, '-inf', cut)
        if redis.call('ZADD', akey, t, ARGV[6]) == 0 then return 0 end
        local dropped = trim(akey, tonumber(ARGV[8]))
        expire_with_newest(akey)
        -- What the cap dropped still has the account in a device's or counterparty's set: noted for
        -- an erasure, until the newest note is 7 d old.
        if #dropped > 0 then
          local lkey = ARGV[7] .. 'l:' .. hex(account)
          redis.call('ZREMRANGEBYSCORE', lkey, '-inf', cut)
          for _, m in ipairs(dropped) do
            local f = string.byte(m, 17)
            if bit.band(f, 1) ~= 0 then redis.call('ZADD', lkey, 'GT', t, 'd' .. string.sub(m, 1, 8)) end
            if bit.band(f, 2) ~= 0 then redis.call('ZADD', lkey, 'GT', t, 'c' .. string.sub(m, 9, 16)) end
          end
          expire_with_newest(lkey)
        end

        -- What the counterparties need to know comes out of it: when the account was last coached,
        -- and (for a coached result) the counterparties it paid, each at its latest payment.
        local coached = bit.band(flags, 4) ~= 0
        local coachedAt = nil
        local paid = {}
        if counterparty ~= '' or coached then
          local log = redis.call('ZRANGEBYSCORE', akey, '(' .. cut, '+inf', 'WITHSCORES')
          local seen = {}
          for i = #log - 1, 1, -2 do
            local f = string.byte(log[i], 17)
            local s = tonumber(log[i + 1])
            if bit.band(f, 4) ~= 0 and coachedAt == nil then coachedAt = s end
            if coached and bit.band(f, 2) ~= 0 then
              local c = string.sub(log[i], 9, 16)
              if not seen[c] then
                seen[c] = true
                paid[#paid + 1] = {c, s}
              end
            end
          end
        end

        if device ~= '' then
          local dkey = KEYS[2]
          redis.call('ZREMRANGEBYSCORE', dkey, '-inf', cut)
          redis.call('ZADD', dkey, 'GT', t, account)
          trim(dkey, tonumber(ARGV[9]))
          expire_with_newest(dkey)
        end

        local function payer(ckey, hkey, paidAt, coachedTime)
          local expired = redis.call('ZRANGEBYSCORE', ckey, '-inf', cut)
          if #expired > 0 then
            redis.call('ZREMRANGEBYSCORE', ckey, '-inf', cut)
            redis.call('HDEL', hkey, unpack(expired))
          end
          redis.call('ZADD', ckey, 'GT', paidAt, account)
          if coachedTime then
            local old = tonumber(redis.call('HGET', hkey, account))
            if old == nil or coachedTime > old then redis.call('HSET', hkey, account, coachedTime) end
          end
          local dropped = trim(ckey, tonumber(ARGV[10]))
          if #dropped > 0 then redis.call('HDEL', hkey, unpack(dropped)) end
          expire_with_newest(ckey, hkey)
        end
        if counterparty ~= '' then payer(KEYS[3], KEYS[4], t, coachedAt) end
        -- A medium/high result marks the account as coached for the counterparties it paid within
        -- 7 d too, whichever came first.
        for _, p in ipairs(paid) do
          if p[1] ~= counterparty then
            local ckey = ARGV[7] .. 'c:' .. hex(p[1])
            payer(ckey, ckey .. ':coached', p[2], t)
          end
        end
        return 1
        """)

    private func hash(_ label: String) -> [UInt8] { Array(("h:" + label).utf8) + Array(repeating: 7, count: 24) }

    /// One Redis key space (a prefix of its own) recorded into by `script(i)` for the i-th event.
    private struct Target {
        let instance: Instance
        let velocity: RedisVelocity
        let prefix: String
        let script: (Int) -> RedisScript
    }

    private func target(_ name: String, limits: VelocityLimits, script: @escaping (Int) -> RedisScript) throws -> Target {
        let prefix = uniquePrefix(name)
        let instance = try Instance(redis, prefix: prefix)
        instance.link.start()
        addTeardownBlock { instance.link.stop() }
        let velocity = RedisVelocity(
            link: instance.link, history: FixedHistory([]), clock: SystemClock(), limits: limits,
            metrics: instance.metrics, mayRebuild: { false })
        return Target(instance: instance, velocity: velocity, prefix: prefix, script: script)
    }

    /// The command `RedisVelocity.record` sends for `event` under the link prefix `prefix`, with
    /// `script` in place of the current record script.
    static func recordCommand(
        _ event: VelocityEvent, prefix: String, limits: VelocityLimits,
        script: RedisScript
    ) -> RedisCommand? {
        let environmentPrefix = prefix + "v:" + event.environment.rawValue + ":"
        guard let command = RedisVelocity.recordCommand(event, prefix: environmentPrefix, limits: limits) else { return nil }
        return .script(script, keys: Array(command.arguments[3..<7]), arguments: Array(command.arguments[7...]))
    }

    /// Records `event` into `target` with `script`.
    private func record(
        _ event: VelocityEvent, into target: Target, with script: RedisScript,
        limits: VelocityLimits
    ) throws -> RedisReply {
        guard let command = Self.recordCommand(event, prefix: target.prefix, limits: limits, script: script) else { return .null }
        return try redis.connect().command(command)
    }

    /// Every key under `prefix` (named without it): its type, members and scores (or fields and
    /// values) and its absolute expiry (ms).
    private func dump(_ prefix: String) throws -> [String: String] {
        let connection = try redis.connect()
        var keys: [String: String] = [:]
        for name in try connection.command("KEYS", RedisArgument(prefix + "*")).elements ?? [] {
            let key = RedisArgument(name.bytes ?? [])
            let type = try connection.command("TYPE", key).string ?? "?"
            let content: [RedisReply]
            switch type {
            case "zset": content = try connection.command("ZRANGE", key, "0", "-1", "WITHSCORES").elements ?? []
            case "hash":
                let flat = try connection.command("HGETALL", key).elements ?? []
                content = stride(from: 0, to: flat.count - 1, by: 2).map { RedisReply.array([flat[$0], flat[$0 + 1]]) }
                    .sorted { "\($0)" < "\($1)" }
            default: content = []
            }
            let expiry = try connection.command("PEXPIRETIME", key).integer ?? 0
            keys[String((name.string ?? "").dropFirst(prefix.count))] = "\(type) expires \(expiry): \(content)"
        }
        return keys
    }

    /// Random histories (late arrivals, the same evaluation twice, evaluations older than 7 d,
    /// equal times, coached results, small caps so they saturate, erasures between records)
    /// recorded by the reference script, by the current one, and by both in turn: the same
    /// answers and the same keys.
    func testTheCurrentScriptWritesWhatTheReferenceWrote() throws {
        let small = { () -> VelocityLimits in
            var limits = VelocityLimits()
            limits.eventsPerAccount = 4
            limits.accountsPerDevice = 3
            limits.payersPerCounterparty = 3
            return limits
        }()
        for (seed, limits) in [(1, small), (2, small), (3, small), (4, VelocityLimits())] as [(UInt64, VelocityLimits)] {
            let targets = [
                try target("reference\(seed)", limits: limits) { _ in Self.reference },
                try target("current\(seed)", limits: limits) { _ in VelocityScripts.record },
                try target("rolling\(seed)", limits: limits) { $0 % 2 == 0 ? VelocityScripts.record : Self.reference }
            ]
            let now = try redis.connect().serverTime() / 1000
            var random = SplitMix64(seed: seed)
            func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
            let accounts = (0..<6).map { "acct\($0)" }, devices = (0..<4).map { "dev\($0)" }
            let counterparties = (0..<4).map { "cp\($0)" }
            let values: [InsightValue?] = [nil, .unknown, .medium, .high]
            let day: Milliseconds = 86_400_000
            var recorded: [VelocityEvent] = []
            var answers: [[RedisReply]] = targets.map { _ in [] }
            for i in 0..<240 {
                let event: VelocityEvent
                if i % 80 == 79 {
                    // An erasure between records, on every target.
                    let erased = ErasedSubject(
                        tenant: "t", account: [hash(accounts[pick(accounts.count)])],
                        device: pick(2) == 0 ? [hash(devices[pick(devices.count)])] : [],
                        counterparty: pick(2) == 0 ? [hash(counterparties[pick(counterparties.count)])] : [])
                    for target in targets { try target.velocity.erase(erased) }
                    continue
                }
                switch pick(20) {
                case 0 where !recorded.isEmpty: event = recorded[pick(recorded.count)]  // the same evaluation again
                case 1:
                    event = VelocityEvent(
                        environment: .production, time: now - 7 * day - 60_000 - Milliseconds(pick(1000)) * 1000,
                        account: hash(accounts[pick(accounts.count)]), device: hash(devices[pick(devices.count)]),
                        counterparty: nil, isPayment: false, value: .high)  // older than 7 d
                default:
                    // Mostly in time order, a third late; times within the last 6.9 days, some equal.
                    let inOrder = now - 6 * day + Milliseconds(i) * 1_000_000 / 4
                    let time = pick(3) == 0 ? now - Milliseconds(pick(596_000)) * 1_000 - 1_000 : inOrder - Milliseconds(pick(2))
                    event = VelocityEvent(
                        environment: pick(5) == 0 ? .sandbox : .production, time: time,
                        account: hash(accounts[pick(accounts.count)]),
                        device: pick(4) == 0 ? nil : hash(devices[pick(devices.count)]),
                        counterparty: pick(3) == 0 ? nil : hash(counterparties[pick(counterparties.count)]),
                        isPayment: pick(3) != 0, value: values[pick(values.count)], raisedByVelocity: pick(4) == 0)
                }
                recorded.append(event)
                for (index, target) in targets.enumerated() {
                    answers[index].append(try record(event, into: target, with: target.script(i), limits: limits))
                }
            }
            XCTAssertEqual(answers[1], answers[0], "seed \(seed): the current script answers as the reference")
            XCTAssertEqual(answers[2], answers[0], "seed \(seed): both in turn answer as the reference")
            XCTAssertTrue(answers[0].contains(.integer(0)) && answers[0].contains(.integer(1)))
            let reference = try dump(targets[0].prefix)
            XCTAssertGreaterThan(reference.count, 10)
            XCTAssertTrue(
                limits.eventsPerAccount > 40 || reference.keys.contains { $0.contains(":l:") },
                "seed \(seed): some account went past its cap")
            XCTAssertTrue(reference.keys.contains { $0.hasSuffix(":coached") })
            for target in targets.dropFirst() {
                let written = try dump(target.prefix)
                XCTAssertEqual(Set(written.keys), Set(reference.keys), "seed \(seed), \(target.prefix)")
                for (key, content) in reference where written[key] != content {
                    XCTFail("seed \(seed), \(target.prefix)\(key): \(written[key] ?? "missing") instead of \(content)")
                }
            }
        }
    }

    /// A key expires 7 d after its newest entry, also when an older evaluation is recorded
    /// after a newer one, and after an erasure took the newest entry out of a device's set.
    func testAKeyExpiresAWeekAfterItsNewestEntry() throws {
        let v = try target("expiry", limits: VelocityLimits()) { _ in VelocityScripts.record }
        let connection = try redis.connect()
        let now = try connection.serverTime() / 1000, week = VelocityWindow.week.milliseconds
        let p = v.prefix + "v:production:"
        func expiry(_ key: String) throws -> Int64 { try connection.command("PEXPIRETIME", RedisArgument(key)).integer ?? 0 }
        func event(_ account: String, at time: Milliseconds, value: InsightValue = .high) -> VelocityEvent {
            VelocityEvent(
                environment: .production, time: time, account: hash(account), device: hash("phone"),
                counterparty: hash("shop"), isPayment: true, value: value)
        }
        v.velocity.record(event("newer", at: now - 1_000))
        v.velocity.record(event("older", at: now - 5_000))
        v.velocity.record(event("newer", at: now - 9_000))
        let keys = try connection.command("KEYS", RedisArgument(p + "*")).elements?.compactMap(\.string) ?? []
        XCTAssertEqual(keys.count, 5, "two accounts, a device, a counterparty and its coached hash: \(keys)")
        for key in keys where !key.contains(":a:") || key.hasSuffix(hexKey("newer")) {
            XCTAssertEqual(try expiry(key), now - 1_000 + week, key)
        }
        XCTAssertEqual(try expiry(p + "a:" + hexKey("older")), now - 5_000 + week)
        // The newest user of the device erased: the device's key expires with its new newest
        // entry once something is recorded for it, even an older evaluation.
        try v.velocity.erase(ErasedSubject(tenant: "t", account: [hash("newer")]))
        v.velocity.record(event("third", at: now - 7_000))
        XCTAssertEqual(try expiry(p + "d:" + hexKey("phone")), now - 5_000 + week)
        XCTAssertEqual(try expiry(p + "c:" + hexKey("shop")), now - 5_000 + week)
        XCTAssertEqual(try expiry(p + "c:" + hexKey("shop") + ":coached"), now - 5_000 + week)
    }

    /// The 16 hex digits that name a subject's keys.
    private func hexKey(_ label: String) -> String {
        let key = VelocityKeys.of(hash(label))
        return (0..<8).map { String(format: "%02x", UInt8(truncatingIfNeeded: key >> (8 * UInt64($0)))) }.joined()
    }
}
