import Dispatch
import InsightDomain
import RedisClient
import Telemetry

/// Velocity shared by every instance, in Redis (docs/velocity.md, "Several instances: Redis"):
/// what an evaluation made on any instance adds is seen by the next evaluation on every other.
///
/// `record` is one script (atomic, on the server's clock; the same evaluation recorded twice is
/// recorded once), `signals` one script that answers the live entries of the query's subjects
/// (during an evaluation, part of the one script of `RedisEvaluationGate`),
/// from which the signals are computed by the same rules as `VelocityTracker`'s
/// (`VelocitySignals.addAccountHistory` and the others), so both answer alike for the same
/// evaluations. Lists are capped as `VelocityLimits` says (`subjectsPerKind` and `shards` do not
/// apply: keys expire 7 d after their newest entry).
///
/// **Redis unavailable** (`RedisLink`): `signals` answers no signals (the evaluation goes on
/// without velocity escalation) and `record` drops the event; both are counted in
/// `insightd_velocity_without_redis_total{operation}`.
///
/// **Redis back.** The background thread of the link checks the marker key: missing (Redis lost
/// its data, or was never filled), the instance for which `mayRebuild` answers true (the lead)
/// replays the store's last 7 days (`VelocityHistory`) into Redis in pipelined batches and sets
/// the marker; present, an instance that lost Redis for a while replays the evaluations made
/// since it went down (what it, and the others, could not record meanwhile). Replays are
/// idempotent, so several instances replaying the same evaluations count them once.
public final class RedisVelocity: VelocityState {
    public let link: RedisLink
    public let limits: VelocityLimits
    private let history: any VelocityHistory
    private let clock: any Clock
    private let mayRebuild: @Sendable () -> Bool
    private let withoutRedis: CounterFamily
    /// Evaluations per pipelined batch of a rebuild.
    static let rebuildBatch = 1000

    /// Never: Redis holds every instance's counts. A Redis that lost them is replayed by the
    /// leading instance while all answer with what is there (docs/velocity.md).
    public var isRebuilding: Bool { false }

    /// `history` is the store's port for rebuilds; `mayRebuild` says whether this instance is the
    /// one that rebuilds a Redis that lost its data (the lead's leadership); `clock` only dates
    /// the history read (signals and records use the server's clock). Registers the rebuild
    /// check with `link`, whose background thread runs it.
    public init(
        link: RedisLink, history: any VelocityHistory, clock: any Clock, limits: VelocityLimits = .init(),
        metrics: MetricsRegistry, mayRebuild: @escaping @Sendable () -> Bool
    ) {
        self.link = link
        self.history = history
        self.clock = clock
        self.limits = limits
        self.mayRebuild = mayRebuild
        withoutRedis = metrics.counter(
            "insightd_velocity_without_redis_total",
            help: "Velocity reads answered without signals and records dropped while Redis was unavailable.",
            labels: ["operation"])
        link.onCheck { [weak self] connection, recoveredSince throws(RedisError) in
            try self?.check(connection, recoveredSince: recoveredSince)
        }
    }

    // MARK: Reads

    public func signals(for query: VelocityQuery) -> VelocitySignals {
        let read = read(for: query)
        var preflight = Preflight(callerKey: read.keys.first ?? "")
        preflight.velocity = read
        return signals(read, reply: read.keys.isEmpty ? nil : preflight.run(on: link))
    }

    /// The keys and counts that read `query`'s subjects.
    func read(for query: VelocityQuery) -> VelocityRead {
        let accounts = VelocityKeys.of(query.accounts)
        let devices = VelocityKeys.of(query.devices)
        let counterparties = VelocityKeys.of(query.counterparties)
        let prefix = environmentPrefix(query.environment)
        var keys: [RedisArgument] = []
        keys.reserveCapacity(accounts.count + devices.count + 2 * counterparties.count)
        for key in accounts { keys.append(RedisArgument(prefix + "a:" + Self.hex(key))) }
        for key in devices { keys.append(RedisArgument(prefix + "d:" + Self.hex(key))) }
        for key in counterparties {
            keys.append(RedisArgument(prefix + "c:" + Self.hex(key)))
            keys.append(RedisArgument(prefix + "c:" + Self.hex(key) + ":coached"))
        }
        return VelocityRead(query: query, accounts: accounts, devices: devices, counterparties: counterparties, keys: keys)
    }

    /// The signals of `read` from a preflight's reply: computed by the same rules as
    /// `VelocityTracker`'s; none (counted) when Redis did not answer.
    func signals(_ read: VelocityRead, reply: PreflightReply?) -> VelocitySignals {
        let (query, accounts, devices, counterparties) = (read.query, read.accounts, read.devices, read.counterparties)
        guard let parts = reply?.signals, parts.count == 1 + accounts.count + devices.count + counterparties.count,
            let now = parts[0].string.flatMap({ Milliseconds($0) })
        else {
            if read.keys.isEmpty {
                // Nothing to look up: the signals of a query that names no subject.
                return VelocitySignals(query: query, accounts: [], devices: [], counterparties: [], now: clock.now())
            }
            withoutRedis.increment("signals")
            var none = VelocitySignals()
            none.now = clock.now()
            return none
        }
        var signals = VelocitySignals(
            query: query, accounts: accounts, devices: devices, counterparties: counterparties,
            now: now)
        var index = 1
        if !accounts.isEmpty {
            // One epoch for every hash's entries: live entries are younger than 7 d.
            let epoch = now - 8 * 86_400_000
            var log: [VelocityAccountEntry] = []
            for _ in accounts {
                let flat = parts[index].elements ?? []
                index += 1
                for i in stride(from: 0, to: flat.count - 1, by: 2) {
                    guard let member = flat[i].bytes, member.count == 25, let time = Self.time(flat[i + 1]) else { continue }
                    log.append(
                        VelocityAccountEntry(
                            device: Self.key(member, at: 0), counterparty: Self.key(member, at: 8),
                            time: UInt32(clamping: time - epoch), flags: member[16]))
                }
            }
            if accounts.count > 1 { log.sort { $0.time < $1.time } }
            signals.addAccountHistory(log[...], epoch: epoch, devices: devices, counterparties: counterparties, now: now)
        }
        if !devices.isEmpty {
            var uses: [VelocityLinkedAccount] = []
            for _ in devices {
                let flat = parts[index].elements ?? []
                index += 1
                for i in stride(from: 0, to: flat.count - 1, by: 2) {
                    guard let member = flat[i].bytes, member.count == 8, let time = Self.time(flat[i + 1]) else { continue }
                    uses.append(VelocityLinkedAccount(account: Self.key(member, at: 0), time: time, coached: nil))
                }
            }
            for use in VelocityLinkedAccount.merged(uses) {
                signals.addDeviceAccount(use.account, time: use.time, queryAccounts: accounts, now: now)
            }
        }
        signals.addQueryAccountOnDevice()
        if !counterparties.isEmpty {
            var payers: [VelocityLinkedAccount] = []
            for _ in counterparties {
                let flat = parts[index].elements ?? []
                index += 1
                for i in stride(from: 0, to: flat.count - 2, by: 3) {
                    guard let member = flat[i].bytes, member.count == 8, let time = Self.time(flat[i + 1]) else { continue }
                    payers.append(
                        VelocityLinkedAccount(
                            account: Self.key(member, at: 0), time: time,
                            coached: flat[i + 2].string.flatMap { Milliseconds($0) }))
                }
            }
            for payer in VelocityLinkedAccount.merged(payers) {
                signals.addCounterpartyPayer(
                    payer.account, time: payer.time, coached: payer.coached,
                    queryAccounts: accounts, now: now)
            }
        }
        return signals
    }

    // MARK: Writes

    /// Queues the record for the link's call thread (`RedisLink.enqueue`), which calls `then`
    /// once Redis answered (or did not: the record is dropped and counted). Without an account
    /// there is nothing to record; when the link does not queue it (stopped) it is recorded here;
    /// `then` runs before returning in both cases.
    public func record(_ event: VelocityEvent, then: @escaping @Sendable () -> Void) {
        guard let command = Self.recordCommand(event, prefix: environmentPrefix(event.environment), limits: limits) else {
            return then()
        }
        let withoutRedis = self.withoutRedis
        let queued = link.enqueue(command) { reply in
            switch reply {
            case nil, .error?: withoutRedis.increment("record")
            default: break
            }
            then()
        }
        if queued { return }
        send(command)
        then()
    }

    /// Records `event` now, on the calling thread (one round trip).
    public func record(_ event: VelocityEvent) {
        guard let command = Self.recordCommand(event, prefix: environmentPrefix(event.environment), limits: limits) else {
            return
        }
        send(command)
    }

    private func send(_ command: RedisCommand) {
        if link.perform({ connection throws(RedisError) in try connection.command(command) }) == nil {
            withoutRedis.increment("record")
        }
    }

    /// The script command that records `event`; nil for an event without an account.
    static func recordCommand(_ event: VelocityEvent, prefix: String, limits: VelocityLimits) -> RedisCommand? {
        guard let accountHash = event.account, !accountHash.isEmpty else { return nil }
        let account = VelocityKeys.of(accountHash)
        let device = event.device.flatMap { $0.isEmpty ? nil : VelocityKeys.of($0) }
        let counterparty = event.isPayment ? event.counterparty.flatMap { $0.isEmpty ? nil : VelocityKeys.of($0) } : nil
        let flags =
            (device != nil ? VelocityAccountEntry.hasDevice : 0)
            | (counterparty != nil ? VelocityAccountEntry.payment : 0)
            | (event.isCoachingResult ? VelocityAccountEntry.coached : 0)
        var member = bytes(device ?? 0) + bytes(counterparty ?? 0) + [flags]
        for shift in stride(from: 56, through: 0, by: -8) { member.append(UInt8(truncatingIfNeeded: event.time >> Int64(shift))) }
        let accountKey = RedisArgument(prefix + "a:" + hex(account))
        let deviceKey = device.map { RedisArgument(prefix + "d:" + hex($0)) } ?? accountKey
        let counterpartyKey = counterparty.map { RedisArgument(prefix + "c:" + hex($0)) } ?? accountKey
        let coachedKey = counterparty.map { RedisArgument(prefix + "c:" + hex($0) + ":coached") } ?? accountKey
        return .script(
            VelocityScripts.record, keys: [accountKey, deviceKey, counterpartyKey, coachedKey],
            arguments: [
                RedisArgument(event.time), RedisArgument(Int(flags)),
                RedisArgument(device.map(bytes) ?? []), RedisArgument(counterparty.map(bytes) ?? []),
                RedisArgument(bytes(account)), RedisArgument(member), RedisArgument(prefix),
                RedisArgument(limits.eventsPerAccount), RedisArgument(limits.accountsPerDevice),
                RedisArgument(limits.payersPerCounterparty),
                RedisArgument(VelocityWindow.week.milliseconds)
            ])
    }

    // MARK: Erasure

    /// Forgets the subject in its environments (both, unless the erasure names one), one script per environment
    /// (`VelocityScripts.erase`). An account's membership in a device's or counterparty's set
    /// is found through the account's own set and, past its cap of `eventsPerAccount`, through
    /// the notes the record script keeps of what the cap dropped. Throws `StoreFailure.unavailable` when Redis does not answer.
    public func erase(_ subject: ErasedSubject) throws {
        let accounts = VelocityKeys.of(subject.account), devices = VelocityKeys.of(subject.device)
        let counterparties = VelocityKeys.of(subject.counterparty)
        guard !accounts.isEmpty || !devices.isEmpty || !counterparties.isEmpty else { return }
        for environment in subject.environments {
            var arguments = [
                RedisArgument(environmentPrefix(environment)), RedisArgument(accounts.count),
                RedisArgument(devices.count)
            ]
            for key in accounts + devices + counterparties { arguments.append(RedisArgument(Self.bytes(key))) }
            let reply = link.perform { connection throws(RedisError) in
                try connection.run(VelocityScripts.erase, arguments: arguments)
            }
            guard let reply, reply.integer != nil else {
                throw StoreFailure.unavailable("Redis did not erase the subject's velocity state")
            }
        }
    }

    // MARK: Rebuilds

    /// The link's check: the marker tells whether Redis holds what was recorded.
    private func check(_ connection: RedisConnection, recoveredSince: Int64?) throws(RedisError) {
        let marked = try connection.command("EXISTS", markerKey).integer == 1
        if !marked {
            guard mayRebuild() else { return }
            try replay(connection, since: clock.now() - VelocityWindow.week.milliseconds, reason: "Redis holds no velocity state")
            _ = try connection.command("SET", markerKey, RedisArgument(clock.now()))
        } else if let since = recoveredSince, since > 0 {
            // A minute before the outage began: what was recorded just before may have been lost.
            try replay(connection, since: since - 60_000, reason: "Redis was unavailable")
        }
    }

    /// Records the store's evaluations since `since` into Redis, read from the store and sent in
    /// pipelined batches of `rebuildBatch` (so a week of history never sits in memory at once).
    func replay(_ connection: RedisConnection, since: Milliseconds, reason: String) throws(RedisError) {
        let started = DispatchTime.now().uptimeNanoseconds
        var read = 0, recorded = 0
        var batch: [RedisCommand] = []
        batch.reserveCapacity(Self.rebuildBatch)
        var cursor: VelocityHistoryCursor? = .from(since)
        let end: VelocityHistoryEnd
        do { end = try history.velocityHistoryEnd() } catch {
            link.report(.failed("velocity rebuild: cannot read the store", reason: "\(error)"))
            return
        }
        while let position = cursor {
            let events: VelocityHistoryBatch
            do { events = try history.velocityEvents(after: position, through: end, limit: Self.rebuildBatch) } catch {
                link.report(.failed("velocity rebuild: cannot read the store", reason: "\(error)"))
                return
            }
            read += events.events.count
            batch.removeAll(keepingCapacity: true)
            for event in events.events {
                if let command = Self.recordCommand(event, prefix: environmentPrefix(event.environment), limits: limits) {
                    batch.append(command)
                }
            }
            for reply in try connection.pipeline(batch) {
                switch reply {
                case .integer(let added): recorded += Int(added)
                case .error(let text): throw RedisError.server(text)
                default: break
                }
            }
            cursor = events.next
        }
        let milliseconds = (DispatchTime.now().uptimeNanoseconds - started) / 1_000_000
        link.report(
            .note(
                "velocity replayed into Redis",
                [
                    ("reason", reason), ("evaluations", "\(read)"),
                    ("recorded", "\(recorded)"), ("ms", "\(milliseconds)")
                ]))
    }

    /// Present while Redis holds the velocity state (set after a full rebuild; never expires).
    private var markerKey: RedisArgument { link.key("v:marker") }

    // MARK: Keys

    private func environmentPrefix(_ environment: Environment) -> String {
        link.settings.keyPrefix + "v:" + environment.rawValue + ":"
    }

    /// The 8 bytes of a subject key, in the order of the hash they came from.
    private static func bytes(_ key: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: key >> (8 * UInt64($0))) }
    }

    private static func key(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        var key: UInt64 = 0
        for i in 0..<8 { key |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        return key
    }

    private static func hex(_ key: UInt64) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(16)
        for byte in bytes(key) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func time(_ score: RedisReply) -> Milliseconds? {
        score.string.flatMap { Double($0) }.map { Milliseconds($0) }
    }
}
