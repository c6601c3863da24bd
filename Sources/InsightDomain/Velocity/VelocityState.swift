/// Velocity state as the evaluation use case reads and writes it (docs/velocity.md):
/// `VelocityTracker` keeps it in this process's memory; a shared backend (InsightRedis's
/// `RedisVelocity`) keeps it where every instance sees it. Both answer through the same signal
/// rules (`VelocitySignals.addAccountHistory` and the others below), so for the same
/// evaluations they give the same signals.
public protocol VelocityState: Sendable {
    /// What is known about the subject of an evaluation in progress.
    func signals(for query: VelocityQuery) -> VelocitySignals
    /// Records one stored evaluation, on the calling thread.
    func record(_ event: VelocityEvent)
    /// Records one stored evaluation that an answer waits for, then calls `then` exactly once
    /// (also when it could not record): before returning when the state is in memory; on a thread
    /// of the backend's own when it is shared, so that neither the store's thread nor an event
    /// loop waits for the backend per evaluation (it sends the records of many evaluations
    /// together).
    func record(_ event: VelocityEvent, then: @escaping @Sendable () -> Void)
    /// Forgets the subject's hashes in both environments (erasure, docs/privacy.md): each
    /// account's own history and its place on devices and counterparties, each device's and
    /// counterparty's own list and their place in accounts' histories, leaving the state a
    /// rebuild from the erased store would give. `tenant` is not used: tenants hash apart.
    /// Throws `StoreFailure.unavailable` when the state could not be reached (nothing, or not
    /// all, was erased: erase again).
    func erase(_ subject: ErasedSubject) throws
    /// True while the counts are being rebuilt and would be short: escalation waits for them.
    var isRebuilding: Bool { get }
}

/// One evaluation of an account as velocity keeps it, 24 bytes: its device and paid
/// counterparty (subject keys, valid when `flags` says so), its time as milliseconds after an
/// epoch the holder chooses, and flags.
public struct VelocityAccountEntry: Sendable, Equatable {
    public static let hasDevice: UInt8 = 1, payment: UInt8 = 2, coached: UInt8 = 4
    public var device: UInt64
    public var counterparty: UInt64
    /// Milliseconds since the holder's epoch.
    public var time: UInt32
    public var flags: UInt8

    public init(device: UInt64, counterparty: UInt64, time: UInt32, flags: UInt8) {
        self.device = device
        self.counterparty = counterparty
        self.time = time
        self.flags = flags
    }
}

/// An account linked to a device (seen on it) or to a counterparty (paid it), in absolute time.
public struct VelocityLinkedAccount: Sendable, Equatable {
    public var account: UInt64
    /// The latest use of the device, or the latest payment.
    public var time: Milliseconds
    /// The account's latest medium/high result (counterparties only).
    public var coached: Milliseconds?

    public init(account: UInt64, time: Milliseconds, coached: Milliseconds?) {
        self.account = account
        self.time = time
        self.coached = coached
    }

    /// Entries of several hashes of one subject as one list, one per account.
    public static func merged(_ entries: [VelocityLinkedAccount]) -> [VelocityLinkedAccount] {
        var byAccount: [VelocityLinkedAccount] = []
        for entry in entries {
            if let i = byAccount.firstIndex(where: { $0.account == entry.account }) {
                byAccount[i].time = max(byAccount[i].time, entry.time)
                if let coached = entry.coached { byAccount[i].coached = max(byAccount[i].coached ?? coached, coached) }
            } else {
                byAccount.append(entry)
            }
        }
        return byAccount
    }
}

/// Subject keys: the first 8 bytes of an identifier's HMAC hash (docs/velocity.md, "Memory").
public enum VelocityKeys {
    /// The distinct keys of `hashes` (empty hashes left out), in order.
    public static func of(_ hashes: [[UInt8]]) -> [UInt64] {
        var keys: [UInt64] = []
        for hash in hashes where !hash.isEmpty {
            let key = SubjectKey.of(hash)
            if !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    /// The key of one hash.
    public static func of(_ hash: [UInt8]) -> UInt64 { SubjectKey.of(hash) }
}

// MARK: - The signal rules, shared by every VelocityState

extension VelocitySignals {
    /// Empty signals for `query`, read at `now`, with `has…` set from the query's keys.
    public init(
        query: VelocityQuery, accounts: [UInt64], devices: [UInt64], counterparties: [UInt64],
        now: Milliseconds
    ) {
        self.init()
        self.now = now
        hasAccount = !accounts.isEmpty
        hasDevice = !devices.isEmpty
        hasCounterparty = !counterparties.isEmpty
        isPayment = query.isPayment
    }

    /// The account's signals from its live evaluations (younger than 7 d), oldest first, with
    /// times after `epoch`; `devices` and `counterparties` are the query's keys.
    public mutating func addAccountHistory(
        _ log: ArraySlice<VelocityAccountEntry>, epoch: Milliseconds,
        devices: [UInt64], counterparties: [UInt64], now: Milliseconds
    ) {
        for entry in log {
            let time = epoch + Milliseconds(entry.time)
            accountEvaluations.add(age: now - time)
            if entry.flags & VelocityAccountEntry.coached != 0 { accountCoachingResults.add(age: now - time) }
            if entry.flags & VelocityAccountEntry.hasDevice != 0, devices.contains(entry.device) {
                deviceLastSeenForAccount = max(deviceLastSeenForAccount ?? time, time)
            }
            if entry.flags & VelocityAccountEntry.payment != 0, counterparties.contains(entry.counterparty) {
                counterpartyLastPaidByAccount = max(counterpartyLastPaidByAccount ?? time, time)
            }
        }
        accountEvaluations.add(age: 0)

        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: max(1, log.count)) { seen in
            // Distinct devices, each counted at its latest use; this evaluation's device counts now.
            var n = 0
            for entry in log.reversed() where entry.flags & VelocityAccountEntry.hasDevice != 0 {
                guard !devices.contains(entry.device), !seen[..<n].contains(entry.device) else { continue }
                seen[n] = entry.device
                n += 1
                accountDevices.add(age: now - epoch - Milliseconds(entry.time))
            }
            if !devices.isEmpty { accountDevices.add(age: 0) }

            // Distinct counterparties, each counted at its first payment; the query's hashes are one.
            n = 0
            for entry in log where entry.flags & VelocityAccountEntry.payment != 0 {
                let counterparty = counterparties.contains(entry.counterparty) ? counterparties[0] : entry.counterparty
                guard !seen[..<n].contains(counterparty) else { continue }
                seen[n] = counterparty
                n += 1
                accountNewCounterparties.add(age: now - epoch - Milliseconds(entry.time))
            }
            if isFirstPaymentToCounterparty { accountNewCounterparties.add(age: 0) }
        }
    }

    /// One live account seen on the query's device at `time` (one entry per account); the
    /// query's own accounts are not counted here.
    @inline(__always)
    public mutating func addDeviceAccount(
        _ account: UInt64, time: Milliseconds, queryAccounts: [UInt64],
        now: Milliseconds
    ) {
        if !queryAccounts.contains(account) { deviceAccounts.add(age: now - time) }
    }

    /// The query's own account on the query's device, once both are named.
    public mutating func addQueryAccountOnDevice() {
        if hasDevice && hasAccount { deviceAccounts.add(age: 0) }
    }

    /// One live account that paid the query's counterparty, at its latest payment `time`, with
    /// its latest medium/high result (nil: none); the query's own accounts are not counted.
    @inline(__always)
    public mutating func addCounterpartyPayer(
        _ account: UInt64, time: Milliseconds, coached: Milliseconds?,
        queryAccounts: [UInt64], now: Milliseconds
    ) {
        guard !queryAccounts.contains(account) else { return }
        counterpartyPayers.add(age: now - time)
        if let coached, VelocityWindow.week.contains(coached, now: now) { counterpartyCoachedPayers.add(age: now - time) }
    }
}
