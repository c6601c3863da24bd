// The rules of a consumption report, a label submission and a retry entry (docs/api.md), as
// every store applies them.

extension Timeliness {
    /// A report made at `reportedAt` for an evaluation due by `deadline` (its
    /// `reportConsumptionBy`): on time up to and at the deadline, late after it.
    public init(reportedAt: Milliseconds, deadline: Milliseconds) {
        self = reportedAt <= deadline ? .onTime : .late
    }
}

extension ConsumptionResult {
    /// The answer to `report` for an evaluation that already holds a report of `status` (nil:
    /// one this binary does not know) naming `insightIds` and recording `intervention`: the same
    /// status, the same ids in any order and the same intervention are `alreadyRecorded`;
    /// anything else is a `conflict` naming the stored status (the report's own when the stored
    /// one is unknown). Nothing is stored either way.
    public static func repeated(
        _ report: ConsumptionReport, stored status: ConsumptionStatus?,
        insightIds: some Sequence<String>, intervention: RecordedIntervention? = nil
    ) -> ConsumptionResult {
        guard let status else { return .conflict(existing: report.status) }
        return status == report.status && Set(insightIds) == Set(report.insightIdsUsed) && intervention == report.intervention
            ? .alreadyRecorded : .conflict(existing: status)
    }
}

extension LabelResultStatus {
    /// An item labelling an insight that the tenant has labelled before, stored with
    /// `storedOutcome` and `storedFraudType` (their raw values, as the stores keep them; docs/api.md,
    /// "POST /v1/labels"): the same outcome and fraud type are a `duplicate`, anything else a
    /// `conflict`. Either way nothing is stored.
    public static func repeating(_ label: Label, storedOutcome: String, storedFraudType: String?) -> LabelResultStatus {
        storedOutcome == label.outcome.rawValue && storedFraudType == label.fraudType?.rawValue ? .duplicate : .conflict
    }
}

extension LabelSubmissionResult {
    /// The answer to `submission` under an idempotency key that already kept a submission whose
    /// body hashed to `keptBodyHash`, answered with `keptResults`: the same body gets those
    /// results again (a replay), another body is `idempotencyKeyReused`.
    public static func replaying(
        _ submission: LabelSubmission, keptBodyHash: [UInt8],
        keptResults: [LabelResultStatus]
    ) -> LabelSubmissionResult {
        keptBodyHash == submission.bodyHash ? .processed(keptResults, replayed: true) : .idempotencyKeyReused
    }
}

extension RetryEntry {
    /// Whether the entry still answers a retry at `now` (docs/api.md, "Retries: `requestId`"): until the
    /// millisecond before `expiresAt`; from then on its key serves a new evaluation.
    public func isLive(at now: Milliseconds) -> Bool { expiresAt > now }
}
