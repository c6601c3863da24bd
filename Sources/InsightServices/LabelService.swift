import Crypto
import InsightDomain

/// Offline fraud labels (docs/api.md "POST /v1/labels") for the insights of the caller's tenant:
/// per-item results, idempotent by key.
public struct LabelService: Sendable {
    let ledger: any EvaluationLedger
    let clock: any Clock
    let metrics: ServiceMetrics

    public init(ledger: any EvaluationLedger, clock: any Clock, metrics: ServiceMetrics) {
        self.ledger = ledger
        self.clock = clock
        self.metrics = metrics
    }

    /// What a submission came to: a status per item, and whether it repeats an earlier one.
    public struct Outcome: Sendable {
        public var statuses: [LabelResultStatus]
        public var replayed: Bool
    }

    /// Submits `items` (nil: an item the decoder refused) under `idempotencyKey`; `body` is the
    /// request's bytes, which a retry under the same key must repeat. Only hashes of both are kept.
    public func submit(
        _ items: [Label?], idempotencyKey: String, body: [UInt8], by caller: Caller,
        resume: @escaping Resume, completion: @escaping Completion<Outcome>
    ) {
        let submission = LabelSubmission(
            callerId: caller.callerId, tenant: caller.tenant, environment: caller.environment, items: items,
            idempotencyKeyHash: SHA256.digest(Array(idempotencyKey.utf8)), bodyHash: SHA256.digest(body),
            receivedAt: clock.now())
        let metrics = self.metrics, tenant = caller.tenant
        ledger.submit(submission) { result in
            resume {
                switch result {
                case .success(.processed(let statuses, let replayed)):
                    if !replayed { metrics.labelled(items, statuses, tenant: tenant) }
                    completion(.success(Outcome(statuses: statuses, replayed: replayed)))
                case .success(.idempotencyKeyReused):
                    completion(.failure(.idempotencyKeyReused))
                case .failure(let failure):
                    completion(.failure(.store(failure)))
                }
            }
        }
    }
}
