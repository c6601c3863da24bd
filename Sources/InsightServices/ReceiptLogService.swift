import InsightDomain

/// The log of receipt heads (`GET /v1/receipts/heads`, docs/api.md "Receipts"): where each
/// instance's chain stands, and one chain read from any point, a page at a time. Heads mix the
/// answers of every tenant in one tree, and reveal only counts and hashes: any caller that
/// evaluates or administers may read them.
public struct ReceiptLogService: Sendable {
    let log: any ReceiptLog

    /// Heads a page may hold.
    public static let limits = 1...1000
    public static let defaultLimit = 100

    public init(log: any ReceiptLog) { self.log = log }

    /// A page of one chain: its heads, and the sequence the next page starts at (nil: the chain
    /// ends here for now).
    public struct Page: Sendable {
        public let heads: [SignedHead]
        public let next: Int64?
    }

    /// The latest head of each instance.
    public func latest() throws(Rejection) -> [SignedHead] {
        do { return try log.latestHeads() } catch { throw .store(Self.failure(error)) }
    }

    /// The heads of `instance` from sequence `from` on, at most `limit`.
    public func chain(of instance: String, from: Int64, limit: Int) throws(Rejection) -> Page {
        let heads: [LoggedHead]
        // One more than asked: whether a next page exists, without a count.
        do { heads = try log.heads(instance: instance, from: from, limit: limit + 1, withLeaves: false) } catch {
            throw .store(Self.failure(error))
        }
        let page = heads.prefix(limit).map(\.signed)
        return Page(heads: page, next: heads.count > limit ? page.last.map { $0.head.sequence + 1 } : nil)
    }

    private static func failure(_ error: any Error) -> StoreFailure {
        (error as? StoreFailure) ?? .unavailable("\(error)")
    }
}
