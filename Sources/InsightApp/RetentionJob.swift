import InsightDomain

/// Deletes what is older than the retention period (docs/privacy.md) daily, first a minute after
/// start, one bounded batch per store job so that traffic interleaves with the purge; then
/// forgets the expired opt-outs held in memory. With several instances only the one leading the
/// periodic jobs purges the store; every instance forgets its expired opt-outs.
final class RetentionJob: Sendable {
    private let store: any RetentionPurge
    private let leadership: any JobLeadership
    private let denials: DenialIndex
    private let retentionDays: Int
    /// Days captured training vectors are kept (at most `retentionDays`).
    private let trainingCaptureDays: Int
    private let measuredTime: MeasuredTime
    private let logger: Logger

    init(
        store: any RetentionPurge, leadership: any JobLeadership, denials: DenialIndex, retentionDays: Int,
        trainingCaptureDays: Int, clock: any Clock, logger: Logger
    ) {
        self.store = store
        self.leadership = leadership
        self.denials = denials
        self.retentionDays = retentionDays
        self.trainingCaptureDays = trainingCaptureDays
        self.measuredTime = MeasuredTime(clock: clock)
        self.logger = logger
    }

    /// The purge's schedule: daily, the first one a minute after its start.
    func periodicJob() -> PeriodicJob {
        PeriodicJob("insightd.retention", firstAfter: 60, every: 86_400) { self.purge() }
    }

    /// Purges now; `completion` gets the totals.
    func purge(completion: (@Sendable (RetentionReport) -> Void)? = nil) {
        let logger = self.logger, denials = self.denials, store = self.store
        let (now, wallAhead) = measuredTime.now()
        if wallAhead > 3_600_000 {
            logger.warning(
                "the wall clock is ahead of the time measured since start; retention counts from the measured time",
                [("aheadSeconds", .number(Double(wallAhead / 1000)))])
        }
        let cutoff = now - Milliseconds(retentionDays) * 86_400_000
        let trainingCutoff = max(cutoff, now - Milliseconds(trainingCaptureDays) * 86_400_000)
        guard leadership.tryLead() else {
            denials.purge(renewedBefore: cutoff)
            completion?(RetentionReport())
            return
        }
        @Sendable func next(_ total: RetentionReport) {
            store.purgeBatch(olderThan: cutoff, trainingVectorsOlderThan: trainingCutoff) { result in
                switch result {
                case .success(let batch) where !batch.isEmpty:
                    var sum = total
                    sum.add(batch)
                    next(sum)
                case .success:
                    denials.purge(renewedBefore: cutoff)
                    if !total.isEmpty {
                        logger.info(
                            "retention purge",
                            [
                                ("evaluations", .number(Double(total.evaluations))),
                                ("labels", .number(Double(total.labels))),
                                ("labelSubmissions", .number(Double(total.labelSubmissions))),
                                ("authorizations", .number(Double(total.authorizations))),
                                ("trainingVectors", .number(Double(total.trainingVectors))),
                                ("receiptHeads", .number(Double(total.receiptHeads)))
                            ])
                    }
                    completion?(total)
                case .failure(let failure):
                    logger.error("retention purge failed; retried tomorrow", [("error", .string("\(failure)"))])
                    completion?(total)
                }
            }
        }
        next(RetentionReport())
    }
}
