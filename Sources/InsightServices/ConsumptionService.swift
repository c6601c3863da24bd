import InsightDomain

/// Consumption reports (docs/api.md "POST /v1/evaluations/{eventId}/consumption"): one per
/// evaluation; the same report again is accepted, a different one is a conflict. Their timeliness
/// feeds the reporting penalty.
public struct ConsumptionService: Sendable {
    let ledger: any EvaluationLedger
    let clock: any Clock
    let metrics: ServiceMetrics

    public init(ledger: any EvaluationLedger, clock: any Clock, metrics: ServiceMetrics) {
        self.ledger = ledger
        self.clock = clock
        self.metrics = metrics
    }

    /// Records `caller`'s report on evaluation `eventId`; completes once it is durable (or was
    /// recorded before).
    public func report(
        _ status: ConsumptionStatus, insightIdsUsed used: [String], intervention: RecordedIntervention? = nil,
        eventId: String, by caller: Caller, resume: @escaping Resume, completion: @escaping Completion<Void>
    ) throws(Rejection) {
        // An id that cannot be one of ours cannot name an evaluation: no store round trip.
        guard eventId.utf8.count <= EvaluationIdentifiers.maxLength else { throw .evaluationNotFound }
        let report = ConsumptionReport(
            eventId: eventId, callerId: caller.callerId, environment: caller.environment,
            status: status, insightIdsUsed: used, reportedAt: clock.now(), tenant: caller.tenant,
            intervention: intervention)
        let metrics = self.metrics
        ledger.report(report) { result in
            resume {
                switch result {
                case .success(.recorded(let timeliness)):
                    metrics.consumed(status, timeliness)
                    completion(.success(()))
                case .success(.alreadyRecorded):
                    completion(.success(()))
                case .success(.conflict(let existing)):
                    completion(.failure(.consumptionConflict(existing: existing)))
                case .success(.evaluationNotFound):
                    completion(.failure(.evaluationNotFound))
                case .success(.interventionRefused(let refusal)):
                    completion(.failure(.interventionRefused(refusal)))
                case .success(.unknownInsightIds(let unknown)):
                    completion(.failure(.unknownInsightId(index: used.firstIndex(of: unknown[0]) ?? 0)))
                case .failure(let failure):
                    completion(.failure(.store(failure)))
                }
            }
        }
    }
}
