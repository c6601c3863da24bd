import Dispatch
import InsightDomain

/// The log of receipt heads (`GET /v1/receipts/heads`, docs/api.md "Receipts"): where each
/// chain stands, and one chain read from any point, a page at a time. A caller sees only its own
/// tenant's and environment's chains (one per instance), so that no tenant learns another's
/// volume or timing; the operator checks every chain with `insightctl receipts verify`.
/// Pages are read off the event loops, as model-performance reports are: a page of 1,000 heads
/// is a long read, and a loop waiting for it would keep every other request on it waiting.
public struct ReceiptLogService: Sendable {
    let log: any ReceiptLog
    /// Reads run here, one at a time, never on an event loop.
    let queue: DispatchQueue

    /// Heads a page may hold.
    public static let limits = 1...1000
    public static let defaultLimit = 100

    public init(log: any ReceiptLog) {
        self.log = log
        queue = DispatchQueue(label: "insightd.receipt-heads")
    }

    /// A page of one chain: its heads, and the sequence the next page starts at (nil: the chain
    /// ends here for now).
    public struct Page: Sendable {
        public let heads: [SignedHead]
        public let next: Int64?
    }

    /// The latest head of each of `caller`'s tenant's and environment's chains (one per instance).
    public func latest(for caller: Caller, resume: @escaping Resume, completion: @escaping Completion<[SignedHead]>) {
        let log = self.log
        let (tenant, environment) = (caller.tenant, caller.environment.rawValue)
        queue.async {
            let result: Result<[SignedHead], Rejection>
            do { result = .success(try log.latestHeads(tenant: tenant, environment: environment)) } catch {
                result = .failure(.store(Self.failure(error)))
            }
            resume { completion(result) }
        }
    }

    /// The heads of `instance`'s chain of `caller`'s tenant and environment from sequence `from`
    /// on, at most `limit`.
    public func chain(
        of instance: String, for caller: Caller, from: Int64, limit: Int, resume: @escaping Resume,
        completion: @escaping Completion<Page>
    ) {
        let log = self.log
        let chain = ReceiptChain(instance: instance, tenant: caller.tenant, environment: caller.environment.rawValue)
        queue.async {
            let result: Result<Page, Rejection>
            do {
                // One more than asked: whether a next page exists, without a count.
                let heads = try log.heads(of: chain, from: from, limit: limit + 1, withLeaves: false)
                let page = heads.prefix(limit).map(\.signed)
                result = .success(Page(heads: page, next: heads.count > limit ? page.last.map { $0.head.sequence + 1 } : nil))
            } catch {
                result = .failure(.store(Self.failure(error)))
            }
            resume { completion(result) }
        }
    }

    private static func failure(_ error: any Error) -> StoreFailure {
        (error as? StoreFailure) ?? .unavailable("\(error)")
    }
}
