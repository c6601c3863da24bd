import InsightDomain
import SQLiteClient

/// Fills a store with synthetic evaluations, straight into the `evaluations` table in large
/// transactions (no insights rows, no writer): what a velocity rebuild reads, at millions of rows
/// in minutes, for the restart benchmark (`insightd-bench restart`) and the restart tests. Never
/// used by the daemon.
///
/// The shape: `count` evaluations spread evenly over `span` milliseconds ending at `end`, in time
/// order, in `environment`, by `callerId`; `count / evaluationsPerAccount` accounts chosen at
/// random, each with a device of its own (one in 20 evaluations on a device shared by 50 accounts),
/// every third evaluation a payment to one of `counterparties`, 5 % of results `medium`. Hashes
/// are 32 pseudo-random bytes (as HMAC-SHA256 outputs are); the same seed gives the same rows.
public struct SyntheticHistory: Sendable {
    public var count: Int
    public var end: Milliseconds
    public var span: Milliseconds
    public var callerId: String
    public var environment: Environment = .production
    public var evaluationsPerAccount = 10
    public var counterparties = 100_000
    public var seed: UInt64 = 1
    /// Rows per transaction.
    public var transactionRows = 200_000

    public init(count: Int, end: Milliseconds, span: Milliseconds, callerId: String) {
        self.count = count
        self.end = end
        self.span = span
        self.callerId = callerId
    }

    /// Inserts the rows into the migrated database at `path`; `progress` gets the rows inserted
    /// after each transaction.
    public func insert(intoDatabaseAt path: String, progress: (Int) -> Void = { _ in }) throws {
        let db = try Database.open(path: path, create: false)
        // A bulk load, not serving: a crash loses the load, never a served evaluation.
        try db.execute("PRAGMA synchronous=OFF; PRAGMA cache_size=-262144")
        let statement = try db.prepare(
            """
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash, tracked_value, raised_by_velocity)
            VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, 0)
            """)
        let accounts = UInt64(max(1, count / max(1, evaluationsPerAccount)))
        var random = SplitMix(seed)
        var done = 0
        while done < count {
            let rows = min(transactionRows, count - done)
            try db.transaction {
                for i in done..<(done + rows) {
                    let time = end - span + Milliseconds(Double(span) * Double(i) / Double(max(1, count)))
                    let account = random.next() % accounts
                    let shared = random.next() % 20 == 0
                    let payment = random.next() % 3 == 0
                    let counterparty = random.next() % UInt64(max(1, counterparties))
                    let medium = random.next() % 20 == 0
                    try statement.run(count: 10) { b in
                        b.text("evt_synthetic_\(seed)_\(i)")
                        b.text(callerId)
                        b.text(environment.rawValue)
                        b.text(payment ? OperationCategory.payment.rawValue : OperationCategory.account.rawValue)
                        b.integer(time)
                        b.integer(time + 3_600_000)
                        b.blob(Self.hash(1, account))
                        b.blob(shared ? Self.hash(4, account / 50) : Self.hash(2, account))
                        b.blob(payment ? Self.hash(3, counterparty) : nil)
                        b.text(medium ? InsightValue.medium.rawValue : InsightValue.unknown.rawValue)
                    }
                }
            }
            done += rows
            progress(done)
        }
    }

    /// 32 bytes determined by (kind, n), spread like a keyed hash's.
    static func hash(_ kind: UInt64, _ n: UInt64) -> [UInt8] {
        var mix = SplitMix(kind &* 0x9E37_79B9_7F4A_7C15 ^ n)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<4 {
            let word = mix.next()
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return bytes
    }
}

/// SplitMix64: a small, fast, seeded generator.
private struct SplitMix {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
