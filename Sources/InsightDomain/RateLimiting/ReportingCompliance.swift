/// Consumption reporting of one caller over the trailing window, as counted from the store.
public struct ReportingStats: Sendable, Equatable {
    /// Evaluations created in the window.
    public var evaluations: Int
    /// Reported by their deadline.
    public var onTime: Int
    /// Reported after their deadline.
    public var late: Int
    /// Past their deadline with no report.
    public var overdue: Int
    /// Not yet due and not yet reported.
    public var pending: Int

    public init(evaluations: Int = 0, onTime: Int = 0, late: Int = 0, overdue: Int = 0, pending: Int = 0) {
        self.evaluations = evaluations
        self.onTime = onTime
        self.late = late
        self.overdue = overdue
        self.pending = pending
    }

    /// Counts one evaluation of the window whose report is due by `deadline`, reported at
    /// `reportedAt` (nil: not reported) as seen at `now`: on time or late as `Timeliness` says,
    /// overdue once `now` is past the deadline, else pending (still due at the deadline itself).
    public mutating func count(reportedAt: Milliseconds?, deadline: Milliseconds, now: Milliseconds) {
        evaluations += 1
        switch reportedAt.map({ Timeliness(reportedAt: $0, deadline: deadline) }) {
        case .onTime: onTime += 1
        case .late: late += 1
        case nil where deadline < now: overdue += 1
        case nil: pending += 1
        }
    }
}

/// How skipped consumption reports cut a caller's rate. Overdue reports beyond the allowance
/// (a share of the window's evaluations, but at least a minimum) put the caller on a penalty
/// step; each step halves the rate, down to a floor. Steps rise at once and fall one at a
/// time, at most one per `recoverySeconds`, so recovery is gradual.
public struct CompliancePolicy: Sendable, Equatable {
    /// The trailing window counted, in seconds.
    public var windowSeconds: Int = 3600
    /// Overdue reports tolerated, as a share of the window's evaluations.
    public var allowanceShare: Double = 0.02
    /// Overdue reports always tolerated.
    public var allowanceMinimum: Int = 20
    /// The lowest share of the caller's rate a penalty leaves.
    public var floorShare: Double = 0.1
    /// Seconds between two steps of recovery.
    public var recoverySeconds: Int = 60

    public init() {}

    /// The overdue reports tolerated for `stats`.
    public func allowance(_ stats: ReportingStats) -> Int {
        max(allowanceMinimum, Int((Double(stats.evaluations) * allowanceShare).rounded(.down)))
    }

    /// The deepest step: the one whose factor reaches the floor.
    public var maxStep: Int {
        var step = 0
        while factor(step: step) > floorShare { step += 1 }
        return step
    }

    /// The step `stats` call for: 0 within the allowance, then one more for each further
    /// allowance's worth of overdue reports. With no allowance at all (both settings 0), one
    /// overdue report calls for the deepest step.
    public func targetStep(_ stats: ReportingStats) -> Int {
        let allowed = allowance(stats)
        guard stats.overdue > allowed else { return 0 }
        guard allowed > 0 else { return maxStep }
        return min(maxStep, (stats.overdue - 1) / allowed)
    }

    /// The share of the rate left at `step`.
    public func factor(step: Int) -> Double {
        max(floorShare, 1 / Double(1 << min(step, 30)))
    }
}
