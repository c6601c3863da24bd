/// The sliding windows velocity counts over. An event is inside a window while it is younger
/// than the window: one exactly 1 h old is out of the 1 h window, one 1 ms younger is in.
public enum VelocityWindow: String, Sendable, CaseIterable {
    case hour = "1h", day = "24h", week = "7d"

    /// The window's length.
    public var milliseconds: Milliseconds {
        switch self {
        case .hour: return 3_600_000
        case .day: return 86_400_000
        case .week: return 604_800_000
        }
    }

    /// Whether an event at `time` is inside the window ending at `now`.
    public func contains(_ time: Milliseconds, now: Milliseconds) -> Bool { now - time < milliseconds }
}

/// One count per window.
public struct VelocityCounts: Sendable, Equatable, CustomStringConvertible {
    public var hour: Int
    public var day: Int
    public var week: Int

    public init(hour: Int = 0, day: Int = 0, week: Int = 0) {
        self.hour = hour
        self.day = day
        self.week = week
    }

    public subscript(window: VelocityWindow) -> Int {
        switch window {
        case .hour: return hour
        case .day: return day
        case .week: return week
        }
    }

    /// Counts one event `age` milliseconds old in every window that holds it.
    mutating func add(age: Milliseconds) {
        if age < VelocityWindow.week.milliseconds { week += 1 } else { return }
        if age < VelocityWindow.day.milliseconds { day += 1 } else { return }
        if age < VelocityWindow.hour.milliseconds { hour += 1 }
    }

    public var description: String { "\(hour)/\(day)/\(week)" }
}

/// One stored evaluation, as the tracker sees it.
public struct VelocityEvent: Sendable, Equatable {
    public var environment: Environment
    /// When the evaluation was made.
    public var time: Milliseconds
    /// HMAC hashes of the identifiers (under whichever key hashed them).
    public var account: [UInt8]?
    public var device: [UInt8]?
    public var counterparty: [UInt8]?
    /// The operation category was `payment`.
    public var isPayment: Bool
    /// The final value returned (nil: none, e.g. an insight error). Only `medium` and `high`
    /// count, as coaching results.
    public var value: InsightValue?
    /// `value` was raised by velocity (`Escalation.raised`): the tracker then counts the
    /// model's own value, one level lower, so velocity does not feed on its own escalations.
    public var raisedByVelocity: Bool

    public init(
        environment: Environment, time: Milliseconds, account: [UInt8]?, device: [UInt8]?,
        counterparty: [UInt8]?, isPayment: Bool, value: InsightValue?, raisedByVelocity: Bool = false
    ) {
        self.environment = environment
        self.time = time
        self.account = account
        self.device = device
        self.counterparty = counterparty
        self.isPayment = isPayment
        self.value = value
        self.raisedByVelocity = raisedByVelocity
    }

    /// Whether the evaluation counts as a medium/high result of the model.
    public var isCoachingResult: Bool {
        switch value {
        case .high?: return true
        case .medium?: return !raisedByVelocity
        case .unknown?, nil: return false
        }
    }
}

/// The subject of an evaluation in progress: each identifier's hashes under every key of the
/// keyring, active first. After a key rotation old records carry old-key hashes; the tracker
/// takes the union.
public struct VelocityQuery: Sendable, Equatable {
    public var environment: Environment
    public var accounts: [[UInt8]]
    public var devices: [[UInt8]]
    public var counterparties: [[UInt8]]
    public var isPayment: Bool

    public init(
        environment: Environment, accounts: [[UInt8]], devices: [[UInt8]], counterparties: [[UInt8]],
        isPayment: Bool
    ) {
        self.environment = environment
        self.accounts = accounts
        self.devices = devices
        self.counterparties = counterparties
        self.isPayment = isPayment
    }
}

/// What the tracker knows about the subject of an evaluation in progress. Counts that the
/// evaluation itself adds to (evaluations, devices, accounts, new counterparties) include it;
/// coaching results are prior ones only, since this evaluation's value is not final yet.
/// Every count saturates at the per-subject caps of `VelocityLimits`.
public struct VelocitySignals: Sendable, Equatable {
    /// When the signals were read.
    public var now: Milliseconds = 0
    /// Evaluations for the account, this one included (0 without an account).
    public var accountEvaluations = VelocityCounts()
    /// Distinct devices the account was evaluated on, this evaluation's device included.
    public var accountDevices = VelocityCounts()
    /// When the account was last evaluated on this device within 7 d; nil if it was not (or
    /// the evaluation names no account or no device).
    public var deviceLastSeenForAccount: Milliseconds?
    /// Distinct accounts evaluated on the device, this evaluation's account included.
    public var deviceAccounts = VelocityCounts()
    /// When the account last paid this counterparty within 7 d; nil if it did not.
    public var counterpartyLastPaidByAccount: Milliseconds?
    /// Distinct counterparties the account paid for the first time within 7 d, counted at
    /// that first payment; this evaluation included when it is a payment to a new counterparty.
    public var accountNewCounterparties = VelocityCounts()
    /// Prior `medium`/`high` results for the account.
    public var accountCoachingResults = VelocityCounts()
    /// Distinct other accounts that paid the counterparty (counted at their latest payment).
    public var counterpartyPayers = VelocityCounts()
    /// Of those, the ones with a `medium`/`high` result within 7 d: the mule signal.
    public var counterpartyCoachedPayers = VelocityCounts()
    /// What the query named.
    public var hasAccount = false
    public var hasDevice = false
    public var hasCounterparty = false
    public var isPayment = false

    public init() {}

    /// The evaluation names an account and a device the account was not seen on within 7 d.
    public var isNewDeviceForAccount: Bool { hasAccount && hasDevice && deviceLastSeenForAccount == nil }

    /// The evaluation is a payment from the account to a counterparty it did not pay within 7 d.
    public var isFirstPaymentToCounterparty: Bool {
        isPayment && hasAccount && hasCounterparty && counterpartyLastPaidByAccount == nil
    }

    /// Devices other than this one the account was evaluated on within `window`.
    public func otherAccountDevices(in window: VelocityWindow) -> Int {
        guard hasAccount else { return 0 }
        return accountDevices[window] - (hasDevice ? 1 : 0)
    }
}

/// Memory bounds of the tracker. Each list keeps its most recent entries and drops the oldest
/// beyond the cap, so counts saturate there.
public struct VelocityLimits: Sendable, Equatable {
    /// Evaluations remembered per account (its devices, payments and results come from them).
    public var eventsPerAccount = 64
    /// Accounts remembered per device.
    public var accountsPerDevice = 32
    /// Paying accounts remembered per counterparty.
    public var payersPerCounterparty = 64
    /// Accounts, devices and counterparties each tracked per environment before the least
    /// recently active are dropped.
    public var subjectsPerKind = 1_000_000
    /// Independent locks per environment.
    public var shards = 64

    public init() {}
}
