import Synchronization

/// Sliding-window velocity over hashed identifiers (docs/velocity.md), in memory, per environment.
///
/// Each subject is keyed by the first 8 bytes of its HMAC hash. An account keeps its most
/// recent evaluations (time, device, paid counterparty, whether the result was medium/high); a
/// device keeps the accounts seen on it; a counterparty keeps the accounts that paid it and
/// whether they were coached. Everything older than 7 d is ignored by reads and dropped by
/// writes and sweeps, so `rebuild` from the store's last 7 days gives the same answers as
/// having recorded the same events live. The maps are split into shards, each behind its own
/// lock; no call ever holds two locks. See docs/velocity.md.
public final class VelocityTracker: VelocityState {
    public let limits: VelocityLimits
    private let clock: any Clock
    /// Production, then sandbox: environments never share state.
    private let tables: [VelocityTable]
    /// Between `beginRebuild` and `finishRebuild`.
    private let rebuilding = Atomic<Bool>(false)

    public init(clock: any Clock, limits: VelocityLimits = .init()) {
        precondition(
            limits.eventsPerAccount >= 1 && limits.accountsPerDevice >= 1
                && limits.payersPerCounterparty >= 1 && limits.subjectsPerKind >= 1 && limits.shards >= 1,
            "velocity limits must be positive")
        self.clock = clock
        self.limits = limits
        let now = clock.now()
        tables = [VelocityTable(limits, now: now), VelocityTable(limits, now: now)]
    }

    // MARK: Reads

    /// What is known about the subject of an evaluation in progress.
    public func signals(for query: VelocityQuery) -> VelocitySignals {
        let now = clock.now()
        let table = self.table(query.environment)
        let accounts = Self.keys(query.accounts)
        let devices = Self.keys(query.devices)
        let counterparties = Self.keys(query.counterparties)
        var signals = VelocitySignals(
            query: query, accounts: accounts, devices: devices, counterparties: counterparties,
            now: now)

        // The common case, one hash per identifier, is read in place under the shard's lock;
        // after a key rotation the hashes' entries are copied out and merged.
        if let key = accounts.first, accounts.count == 1 {
            table.shard(key).withLock { shard in
                shard.prepare(now: now)
                let log = shard.accounts[key] ?? []
                let cut = shard.expiry(now)
                let live = log[(log.firstIndex { Int64($0.time) > cut } ?? log.endIndex)...]
                signals.addAccountHistory(
                    live, epoch: shard.epoch, devices: devices, counterparties: counterparties,
                    now: now)
            }
        } else if !accounts.isEmpty {
            // Copied out on one epoch of their own: live entries are younger than 7 d.
            let epoch = now - VelocityTime.epochLead
            var log: [AccountEntry] = []
            for key in accounts {
                table.shard(key).withLock { shard in
                    shard.prepare(now: now)
                    let cut = shard.expiry(now)
                    for var entry in shard.accounts[key] ?? [] where Int64(entry.time) > cut {
                        entry.time = UInt32(clamping: shard.absolute(entry.time) - epoch)
                        log.append(entry)
                    }
                }
            }
            log.sort { $0.time < $1.time }
            signals.addAccountHistory(log[...], epoch: epoch, devices: devices, counterparties: counterparties, now: now)
        }

        if let key = devices.first, devices.count == 1 {
            table.shard(key).withLock { shard in
                shard.prepare(now: now)
                guard let uses = shard.devices[key] else { return }
                let cut = shard.expiry(now)
                for use in uses where Int64(use.time) > cut {
                    signals.addDeviceAccount(use.account, time: shard.absolute(use.time), queryAccounts: accounts, now: now)
                }
            }
        } else if !devices.isEmpty {
            var uses: [LinkedAccount] = []
            for key in devices {
                table.shard(key).withLock { shard in
                    shard.prepare(now: now)
                    shard.liveAccounts(of: key, now: now, into: &uses)
                }
            }
            for use in LinkedAccount.merged(uses) {
                signals.addDeviceAccount(use.account, time: use.time, queryAccounts: accounts, now: now)
            }
        }
        signals.addQueryAccountOnDevice()

        if let key = counterparties.first, counterparties.count == 1 {
            table.shard(key).withLock { shard in
                shard.prepare(now: now)
                guard let payers = shard.counterparties[key] else { return }
                let cut = shard.expiry(now)
                for payer in payers where Int64(payer.time) > cut {
                    signals.addCounterpartyPayer(
                        payer.account, time: shard.absolute(payer.time),
                        coached: Int64(payer.coached) > cut ? shard.absolute(payer.coached) : nil,
                        queryAccounts: accounts, now: now)
                }
            }
        } else if !counterparties.isEmpty {
            var payers: [LinkedAccount] = []
            for key in counterparties {
                table.shard(key).withLock { shard in
                    shard.prepare(now: now)
                    shard.livePayers(of: key, now: now, into: &payers)
                }
            }
            for payer in LinkedAccount.merged(payers) {
                signals.addCounterpartyPayer(
                    payer.account, time: payer.time, coached: payer.coached,
                    queryAccounts: accounts, now: now)
            }
        }
        return signals
    }

    /// Subjects tracked now, over every kind and environment (expired ones not yet swept included).
    public var trackedSubjects: Int {
        tables.reduce(0) { total, table in
            total
                + table.shards.reduce(0) { sum, box in
                    sum + box.state.withLock { $0.accounts.count + $0.devices.count + $0.counterparties.count }
                }
        }
    }

    // MARK: Writes

    /// The port's record for an answer that waits: in memory, so done before `then`.
    public func record(_ event: VelocityEvent, then: @escaping @Sendable () -> Void) {
        record(event)
        then()
    }

    /// Records one stored evaluation. Events older than 7 d, and events without an account
    /// (nothing to key them by), are ignored.
    public func record(_ event: VelocityEvent) {
        let now = clock.now()
        guard VelocityWindow.week.contains(event.time, now: now), let accountHash = event.account,
            !accountHash.isEmpty
        else { return }
        let table = self.table(event.environment)
        let account = SubjectKey.of(accountHash)
        let device = event.device.flatMap { $0.isEmpty ? nil : SubjectKey.of($0) }
        let counterparty = event.isPayment ? event.counterparty.flatMap { $0.isEmpty ? nil : SubjectKey.of($0) } : nil
        let coached = event.isCoachingResult
        let limits = self.limits

        // The account's own history; what the counterparties need to know comes out of it.
        var coachedAt: Milliseconds?
        var paid: [(counterparty: UInt64, time: Milliseconds)] = []
        table.shard(account).withLock { shard in
            shard.prepare(now: now)
            guard let offset = shard.offset(event.time) else { return }
            shard.recordEvaluation(
                of: account,
                AccountEntry(
                    device: device ?? 0, counterparty: counterparty ?? 0,
                    time: offset,
                    flags: (device != nil ? AccountEntry.hasDevice : 0)
                        | (counterparty != nil ? AccountEntry.payment : 0)
                        | (coached ? AccountEntry.coached : 0)),
                now: now, limits: limits)
            if counterparty != nil || coached, let log = shard.accounts[account] {
                let cut = shard.expiry(now)
                for entry in log.reversed() where Int64(entry.time) > cut {
                    if entry.flags & AccountEntry.coached != 0 && coachedAt == nil { coachedAt = shard.absolute(entry.time) }
                    if coached, entry.flags & AccountEntry.payment != 0,
                        !paid.contains(where: { $0.counterparty == entry.counterparty })
                    {
                        paid.append((entry.counterparty, shard.absolute(entry.time)))
                    }
                }
            }
            shard.didWrite(now: now)
        }

        if let device {
            table.shard(device).withLock { shard in
                shard.prepare(now: now)
                guard let offset = shard.offset(event.time) else { return }
                shard.recordDeviceUse(device, account: account, time: offset, now: now, limits: limits)
                shard.didWrite(now: now)
            }
        }
        if let counterparty {
            recordPayment(table, counterparty, account: account, paid: event.time, coached: coachedAt, now: now)
        }
        // A medium/high result marks the account as coached for the counterparties it paid
        // within 7 d too, whichever came first.
        for payment in paid where payment.counterparty != counterparty {
            recordPayment(
                table, payment.counterparty, account: account, paid: payment.time, coached: event.time,
                now: now)
        }
    }

    private func recordPayment(
        _ table: VelocityTable, _ counterparty: UInt64, account: UInt64, paid: Milliseconds,
        coached: Milliseconds?, now: Milliseconds
    ) {
        let limits = self.limits
        table.shard(counterparty).withLock { shard in
            shard.prepare(now: now)
            guard let paidOffset = shard.offset(paid) else { return }
            let coachedOffset = coached.flatMap { shard.offset($0) } ?? 0
            shard.recordPayer(
                counterparty, account: account, paid: paidOffset, coached: coachedOffset, now: now,
                limits: limits)
            shard.didWrite(now: now)
        }
    }

    /// Replaces all state with `events` (the store's last 7 days, oldest first) at once.
    public func rebuild(from events: some Sequence<VelocityEvent>) {
        beginRebuild()
        for event in events { record(event) }
        finishRebuild()
    }

    // MARK: Erasure

    /// Forgets the subject (`VelocityState.erase`): every shard of its environments (both, unless
    /// the erasure names one) is visited, since the subject's keys appear in other subjects'
    /// lists wherever those are kept.
    public func erase(_ subject: ErasedSubject) throws {
        let accounts = Set(Self.keys(subject.account)), devices = Set(Self.keys(subject.device))
        let counterparties = Set(Self.keys(subject.counterparty))
        guard !accounts.isEmpty || !devices.isEmpty || !counterparties.isEmpty else { return }
        for environment in subject.environments {
            for box in table(environment).shards {
                box.withLock { $0.erase(accounts: accounts, devices: devices, counterparties: counterparties) }
            }
        }
    }

    // MARK: Rebuilding beside live traffic

    /// Empties the state and marks it rebuilding. The rebuild then records the evaluations
    /// stored before it began, batch by batch, while live evaluations are recorded as they come:
    /// both go through `record`, which gives the same state in whatever order they interleave
    /// (every list keeps its entries ordered by time, see docs/velocity.md), so each evaluation
    /// counts once as long as the two sets do not overlap (the store's sequence cuts them apart:
    /// `VelocityHistory.velocityHistoryEnd`).
    public func beginRebuild() {
        let now = clock.now()
        rebuilding.store(true, ordering: .releasing)
        for table in tables {
            for (i, box) in table.shards.enumerated() {
                box.state.withLock { $0 = VelocityShard(now: now, stagger: Double(i) / Double(table.shards.count)) }
            }
        }
    }

    /// Marks the rebuild done: the counts hold the last 7 days again.
    public func finishRebuild() {
        rebuilding.store(false, ordering: .releasing)
    }

    /// A rebuild has begun and not finished: the counts lack part of the last 7 days.
    public var isRebuilding: Bool { rebuilding.load(ordering: .acquiring) }

    /// Drops everything older than 7 d now (writes also do it as they go).
    public func pruneExpired() {
        let now = clock.now()
        for table in tables {
            for box in table.shards {
                box.state.withLock { shard in
                    shard.prepare(now: now)
                    shard.sweep(now: now)
                }
            }
        }
    }

    // MARK: Keys

    private func table(_ environment: Environment) -> VelocityTable {
        switch environment {
        case .production: return tables[0]
        case .sandbox: return tables[1]
        }
    }

    private static func keys(_ hashes: [[UInt8]]) -> [UInt64] { VelocityKeys.of(hashes) }
}

// MARK: - Storage

/// One environment's state.
private final class VelocityTable: Sendable {
    let shards: [VelocityShardBox]

    init(_ limits: VelocityLimits, now: Milliseconds) {
        shards = (0..<limits.shards).map {
            VelocityShardBox(VelocityShard(now: now, stagger: Double($0) / Double(limits.shards)))
        }
    }

    func shard(_ key: UInt64) -> VelocityShardBox { shards[Int(key % UInt64(shards.count))] }
}

private final class VelocityShardBox: Sendable {
    let state: Mutex<VelocityShard>
    init(_ shard: VelocityShard) { state = Mutex(shard) }

    func withLock<R>(_ body: (inout VelocityShard) -> R) -> R { state.withLock { body(&$0) } }
}

/// An entry of a per-subject list, ordered by `time` (milliseconds since the shard's epoch).
private protocol VelocityTimed {
    var time: UInt32 { get }
}

/// An entry kept once per account, merged with the account's older entry.
private protocol VelocityPerAccount: VelocityTimed {
    var account: UInt64 { get }
    mutating func merge(_ older: Self)
}

/// One evaluation of an account (`VelocityAccountEntry`), its time after the shard's epoch.
private typealias AccountEntry = VelocityAccountEntry
extension VelocityAccountEntry: VelocityTimed {}

/// One account seen on a device, 16 bytes.
private struct DeviceEntry: VelocityPerAccount {
    var account: UInt64
    var time: UInt32

    mutating func merge(_ older: DeviceEntry) { time = max(time, older.time) }
}

/// One account that paid a counterparty (`time`: its latest payment), 16 bytes. `coached` is 0
/// when the account had no medium/high result (offset 0 is always expired: the epoch is at
/// least 8 d back).
private struct PayerEntry: VelocityPerAccount {
    var account: UInt64
    var time: UInt32
    var coached: UInt32

    mutating func merge(_ older: PayerEntry) {
        time = max(time, older.time)
        coached = max(coached, older.coached)
    }
}

/// Copies out of a shard, in absolute time.
private typealias LinkedAccount = VelocityLinkedAccount

/// Times are kept as 32-bit millisecond offsets from a per-shard epoch (49.7 d of range) set
/// `epochLead` before now, moved forward once it is `rebaseAfter` old.
private enum VelocityTime {
    static let week = VelocityWindow.week.milliseconds
    static let rebaseAfter: Milliseconds = 30 * 86_400_000
    static let epochLead: Milliseconds = 8 * 86_400_000
    static let sweepInterval: Milliseconds = 3_600_000
}

/// Every list is ordered oldest first.
private struct VelocityShard {
    var epoch: Milliseconds
    var accounts: [UInt64: [AccountEntry]] = [:]
    var devices: [UInt64: [DeviceEntry]] = [:]
    var counterparties: [UInt64: [PayerEntry]] = [:]
    var lastSweep: Milliseconds

    /// `stagger` (0..<1) spreads the shards' hourly sweeps over the hour.
    init(now: Milliseconds, stagger: Double = 0) {
        epoch = now - VelocityTime.epochLead
        lastSweep = now - Milliseconds(Double(VelocityTime.sweepInterval) * stagger)
    }

    // MARK: Time

    func offset(_ time: Milliseconds) -> UInt32? {
        let delta = time - epoch
        return delta > 0 && delta <= Milliseconds(UInt32.max) ? UInt32(delta) : nil
    }

    func absolute(_ offset: UInt32) -> Milliseconds { epoch + Milliseconds(offset) }

    /// Offsets at or below this are 7 d old or more at `now`.
    func expiry(_ now: Milliseconds) -> Int64 { now - VelocityTime.week - epoch }

    /// Moves the epoch forward before offsets run out of range.
    mutating func prepare(now: Milliseconds) {
        guard now - epoch > VelocityTime.rebaseAfter else { return }
        sweep(now: now)
        let shift = now - VelocityTime.epochLead - epoch
        guard shift > 0 else { return }
        // After the sweep every offset is newer than 7 d, hence above the shift; when the shift
        // is beyond 32 bits nothing is left to move.
        guard shift <= Milliseconds(UInt32.max) else {
            epoch += shift
            return
        }
        let delta = UInt32(shift)
        for i in accounts.values.indices {
            for j in accounts.values[i].indices { accounts.values[i][j].time -= delta }
        }
        for i in devices.values.indices {
            for j in devices.values[i].indices { devices.values[i][j].time -= delta }
        }
        for i in counterparties.values.indices {
            for j in counterparties.values[i].indices {
                counterparties.values[i][j].time -= delta
                let coached = counterparties.values[i][j].coached
                counterparties.values[i][j].coached = coached > delta ? coached - delta : 0
            }
        }
        epoch += shift
    }

    // MARK: Reads

    func liveAccounts(of key: UInt64, now: Milliseconds, into out: inout [LinkedAccount]) {
        guard let uses = devices[key] else { return }
        let cut = expiry(now)
        for use in uses.reversed() where Int64(use.time) > cut {
            out.append(LinkedAccount(account: use.account, time: absolute(use.time), coached: nil))
        }
    }

    func livePayers(of key: UInt64, now: Milliseconds, into out: inout [LinkedAccount]) {
        guard let payers = counterparties[key] else { return }
        let cut = expiry(now)
        for payer in payers.reversed() where Int64(payer.time) > cut {
            out.append(
                LinkedAccount(
                    account: payer.account, time: absolute(payer.time),
                    coached: payer.coached != 0 && Int64(payer.coached) > cut ? absolute(payer.coached) : nil))
        }
    }

    // MARK: Writes

    mutating func recordEvaluation(of key: UInt64, _ entry: AccountEntry, now: Milliseconds, limits: VelocityLimits) {
        let cut = expiry(now)
        let before = accounts.count
        accounts[key, default: []].insertOrdered(entry, expiry: cut, cap: limits.eventsPerAccount)
        if accounts.count > before { Self.bound(&accounts, limits: limits, expiry: cut) }
    }

    mutating func recordDeviceUse(
        _ key: UInt64, account: UInt64, time: UInt32, now: Milliseconds,
        limits: VelocityLimits
    ) {
        let cut = expiry(now)
        let before = devices.count
        devices[key, default: []].upsert(
            DeviceEntry(account: account, time: time), expiry: cut,
            cap: limits.accountsPerDevice)
        if devices.count > before { Self.bound(&devices, limits: limits, expiry: cut) }
    }

    mutating func recordPayer(
        _ key: UInt64, account: UInt64, paid: UInt32, coached: UInt32, now: Milliseconds,
        limits: VelocityLimits
    ) {
        let cut = expiry(now)
        let before = counterparties.count
        counterparties[key, default: []].upsert(
            PayerEntry(account: account, time: paid, coached: coached), expiry: cut,
            cap: limits.payersPerCounterparty)
        if counterparties.count > before { Self.bound(&counterparties, limits: limits, expiry: cut) }
    }

    /// Drops the lists of the given subjects, the given accounts from devices' and
    /// counterparties' lists, and the given devices and counterparties from accounts' entries
    /// (as if those evaluations had been recorded without them).
    mutating func erase(
        accounts erased: Set<UInt64>, devices erasedDevices: Set<UInt64>,
        counterparties erasedCounterparties: Set<UInt64>
    ) {
        for key in erased { accounts[key] = nil }
        for key in erasedDevices { devices[key] = nil }
        for key in erasedCounterparties { counterparties[key] = nil }
        if !erased.isEmpty {
            for i in devices.values.indices { devices.values[i].removeAll { erased.contains($0.account) } }
            for i in counterparties.values.indices { counterparties.values[i].removeAll { erased.contains($0.account) } }
            devices = devices.filter { !$0.value.isEmpty }
            counterparties = counterparties.filter { !$0.value.isEmpty }
        }
        guard !erasedDevices.isEmpty || !erasedCounterparties.isEmpty else { return }
        for i in accounts.values.indices {
            for j in accounts.values[i].indices {
                let entry = accounts.values[i][j]
                if entry.flags & AccountEntry.hasDevice != 0, erasedDevices.contains(entry.device) {
                    accounts.values[i][j].device = 0
                    accounts.values[i][j].flags &= ~AccountEntry.hasDevice
                }
                if entry.flags & AccountEntry.payment != 0, erasedCounterparties.contains(entry.counterparty) {
                    accounts.values[i][j].counterparty = 0
                    accounts.values[i][j].flags &= ~AccountEntry.payment
                }
            }
        }
    }

    /// Sweeps the shard on a write once an hour (each subject also drops its own expired
    /// entries whenever it is written).
    mutating func didWrite(now: Milliseconds) {
        if now - lastSweep >= VelocityTime.sweepInterval { sweep(now: now) }
    }

    /// Drops every entry 7 d old or more, and subjects left with none.
    mutating func sweep(now: Milliseconds) {
        let cut = expiry(now)
        Self.expire(&accounts, expiry: cut)
        Self.expire(&devices, expiry: cut)
        Self.expire(&counterparties, expiry: cut)
        lastSweep = now
    }

    private static func expire<E: VelocityTimed>(_ map: inout [UInt64: [E]], expiry cut: Int64) {
        var emptied = 0
        for i in map.values.indices {
            let expired = map.values[i].prefix { Int64($0.time) <= cut }.count
            if expired > 0 {
                map.values[i].removeFirst(expired)
                if map.values[i].isEmpty { emptied += 1 }
            }
        }
        if emptied > 0 { map = map.filter { !$0.value.isEmpty } }
    }

    /// Keeps a map within its share of `subjectsPerKind`: expired subjects go first, then the
    /// least recently active eighth.
    private static func bound<E: VelocityTimed>(_ map: inout [UInt64: [E]], limits: VelocityLimits, expiry cut: Int64) {
        let cap = max(1, limits.subjectsPerKind / limits.shards)
        guard map.count > cap else { return }
        expire(&map, expiry: cut)
        guard map.count > cap else { return }
        var latest = map.values.map { $0.last?.time ?? 0 }
        latest.sort()
        let threshold = latest[min(latest.count - 1, max(0, latest.count / 8 - 1))]
        map = map.filter { ($0.value.last?.time ?? 0) > threshold }
    }
}

private extension Array where Element: VelocityTimed {
    /// Drops expired entries, inserts `entry` after every entry not newer, keeps the newest `cap`
    /// (making room first, so a full list never grows its buffer).
    mutating func insertOrdered(_ entry: Element, expiry cut: Int64, cap: Int) {
        let expired = prefix { Int64($0.time) <= cut }.count
        if expired > 0 { removeFirst(expired) }
        if count >= cap {
            guard entry.time >= self[count - cap].time else { return }  // older than all it would keep
            removeFirst(count - cap + 1)
        }
        var i = count
        while i > 0, self[i - 1].time > entry.time { i -= 1 }
        insert(entry, at: i)
    }
}

private extension Array where Element: VelocityPerAccount {
    /// Inserts `entry`, merged with its account's older entry, keeping the list ordered by time.
    mutating func upsert(_ entry: Element, expiry cut: Int64, cap: Int) {
        var entry = entry
        if let i = firstIndex(where: { $0.account == entry.account }) {
            entry.merge(self[i])
            remove(at: i)
        }
        insertOrdered(entry, expiry: cut, cap: cap)
    }
}
