import SQLiteClient
import Synchronization

/// Which row of `retry_entries` holds the newest entry under each request key (docs/api.md,
/// "Retries"), kept in memory so that the table needs no index on the key. A key is an HMAC:
/// an index over keys is a B-tree in random order, in which every evaluation's entry would
/// dirty a page of its own in every commit (docs/performance.md, "Figures behind the code").
///
/// The embedded store has one process per database (the instance lock), and its writer is the
/// only one to insert entries, so the index is complete: a key it does not hold has no live
/// entry, and nearly every request learns that without reading the database. It may also hold
/// rows that are gone or hold another key (an insert whose transaction rolled back, and a
/// rowid used again after it): whoever reads a row found here compares the row's key and
/// expiry. Its memory is a dictionary of 16-byte keys and 8-byte rows per live entry
/// (docs/operations.md, "Capacity").
final class RetryKeyIndex: Sendable {
    /// A key's first 16 bytes (keys are 32-byte HMACs: two keys sharing 16 bytes do not happen).
    struct Prefix: Hashable {
        let high: UInt64
        let low: UInt64

        init(_ key: [UInt8]) {
            var high: UInt64 = 0, low: UInt64 = 0
            for (i, byte) in key.prefix(16).enumerated() {
                if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
            }
            self.high = high
            self.low = low
        }
    }

    private let rows: Mutex<[Prefix: Int64]>
    /// When the oldest stored entry can have expired (the writer's sweep reads the table only
    /// from then on): `.min` when unknown, `.max` when the table is empty. Written by the
    /// writer thread only; a rolled-back transaction can leave it later than the table's oldest
    /// entry, which then waits a little longer for its sweep.
    let nextSweep = Atomic<Int64>(.min)

    /// The index of every entry stored in `db` now (expired ones too: the sweep removes them).
    init(of db: SQLiteConnection) throws {
        var rows: [Prefix: Int64] = [:]
        let all = try db.prepare("SELECT entry, request_key FROM retry_entries ORDER BY entry")
        while try all.step() { rows[Prefix(all.blob(1) ?? [])] = all.int64(0) }
        self.rows = Mutex(rows)
    }

    /// The row that may hold `key`'s newest entry.
    func row(of key: [UInt8]) -> Int64? {
        let prefix = Prefix(key)
        return rows.withLock { $0[prefix] }
    }

    /// `key`'s newest entry is in `row`.
    func set(_ key: [UInt8], row: Int64) {
        let prefix = Prefix(key)
        rows.withLock { $0[prefix] = row }
    }

    /// `row`, which held `key`'s entry, is deleted; `key` is forgotten unless a newer row holds it.
    func remove(_ key: [UInt8], row: Int64) {
        let prefix = Prefix(key)
        rows.withLock { rows in
            if rows[prefix] == row { rows[prefix] = nil }
        }
    }

    /// Keys held (expired ones until swept).
    var count: Int { rows.withLock { $0.count } }
}
