/// The rules of a consumption report (docs/api.md, "Consumption reports"), as every store
/// applies them.
extension Timeliness {
    /// A report made at `reportedAt` for an evaluation due by `deadline` (its
    /// `reportConsumptionBy`): on time up to and at the deadline, late after it.
    public init(reportedAt: Milliseconds, deadline: Milliseconds) {
        self = reportedAt <= deadline ? .onTime : .late
    }
}

extension ConsumptionResult {
    /// The answer to `report` for an evaluation that already holds a report of `status` (nil:
    /// one this binary does not know) naming `insightIds`: the same status and the same ids, in
    /// any order, are `alreadyRecorded`; anything else is a `conflict` naming the stored status
    /// (the report's own when the stored one is unknown). Nothing is stored either way.
    public static func repeated(_ report: ConsumptionReport, stored status: ConsumptionStatus?,
                                insightIds: some Sequence<String>) -> ConsumptionResult {
        guard let status else { return .conflict(existing: report.status) }
        return status == report.status && Set(insightIds) == Set(report.insightIdsUsed)
            ? .alreadyRecorded : .conflict(existing: status)
    }
}
