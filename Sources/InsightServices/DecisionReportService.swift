import InsightDomain

/// The admin view of decisions against consumption reports (docs/api.md,
/// `GET /admin/v1/decisions`): per caller of the admin's tenant and environment, for each action, how many
/// evaluations the policy decided so, how many were reported, and how many of those reports say the
/// caller went ahead without friction (`ConsumptionStatus.proceeded`).
public struct DecisionReportService: Sendable {
    let source: any DecisionReporting
    let administration: any CallerAdministration
    let clock: any Clock

    /// Days a report may cover.
    public static let days = 1...400

    public init(source: any DecisionReporting, administration: any CallerAdministration, clock: any Clock) {
        self.source = source
        self.administration = administration
        self.clock = clock
    }

    /// The counts of one action.
    public struct ActionCounts: Sendable, Equatable {
        public var evaluations = 0
        /// With a consumption report.
        public var reported = 0
        /// Reported with a status that went ahead without friction.
        public var proceeded = 0
        /// Reports by status.
        public var statuses: [ConsumptionStatus: Int] = [:]
        /// Reports that recorded an intervention, by its kind and the person's response (nil:
        /// none, for kind `none`).
        public var interventions: [InterventionKind: [InterventionResponse?: Int]] = [:]

        public init() {}
    }

    /// One caller's counts.
    public struct CallerDecisions: Sendable, Equatable {
        public var callerId: String
        /// The caller: set in every report (counts of a caller the store does not know are left
        /// out with the other environment's, since whose they are cannot be told).
        public var caller: Caller?
        public var actions: [DecisionAction: ActionCounts]

        /// Reports that went ahead where the policy said `confirm`, `confirmOutOfBand` or `block`.
        public var proceededAgainstPolicy: Int {
            actions.filter { $0.key != .proceed }.values.reduce(0) { $0 + $1.proceeded }
        }
    }

    /// The period `from..<to` (the last `days` days) and its callers, those that proceeded against
    /// the policy most first.
    public func report(of admin: Caller, days: Int) throws(Rejection) -> (from: Milliseconds, to: Milliseconds, callers: [CallerDecisions])
    {
        let to = clock.now() + 1
        let from = to - Milliseconds(days) * 86_400_000
        var byCaller: [String: CallerDecisions] = [:]
        // The store counts the tenant's callers; those of the other environment are left out
        // (`Caller.administers`), each caller read once.
        var outside = Set<String>()
        do {
            for count in try source.decisionCounts(tenant: admin.tenant, from: from, to: to) where !outside.contains(count.callerId) {
                var entry: CallerDecisions
                if let known = byCaller[count.callerId] {
                    entry = known
                } else {
                    let caller = try administration.caller(count.callerId, tenant: admin.tenant)
                    guard let caller, admin.administers(caller) else {
                        outside.insert(count.callerId)
                        continue
                    }
                    entry = CallerDecisions(callerId: count.callerId, caller: caller, actions: [:])
                }
                entry.add(count)
                byCaller[count.callerId] = entry
            }
        } catch {
            throw .unreadable(.callers)
        }
        let ordered = byCaller.values.sorted {
            ($0.proceededAgainstPolicy, $1.callerId) > ($1.proceededAgainstPolicy, $0.callerId)
        }
        return (from, to, ordered)
    }
}

extension DecisionReportService.CallerDecisions {
    /// Counts one of the store's counts in.
    mutating func add(_ count: DecisionCount) {
        var action = actions[count.action] ?? DecisionReportService.ActionCounts()
        action.evaluations += count.evaluations
        if let status = count.status {
            action.reported += count.evaluations
            action.statuses[status, default: 0] += count.evaluations
            if status.proceeded { action.proceeded += count.evaluations }
        }
        if let kind = count.intervention { action.interventions[kind, default: [:]][count.response, default: 0] += count.evaluations }
        actions[count.action] = action
    }
}
