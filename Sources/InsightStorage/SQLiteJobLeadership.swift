import InsightDomain

/// Leadership of the periodic jobs with SQLite: always this process, since the state
/// directory's instance lock already lets only one daemon open the store.
public struct SQLiteJobLeadership: JobLeadership {
    public init() {}
    public func tryLead() -> Bool { true }
    public func release() {}
}
