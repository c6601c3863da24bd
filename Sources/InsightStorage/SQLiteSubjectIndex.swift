import Foundation
internal import Glibc
import InsightDomain
import SQLiteClient
import Synchronization

/// The subject index of the embedded store: which evaluations carried which subject hash, kept
/// in a side file beside the database (`insightd-subjects.db`) by one background thread, so that
/// an evaluation's commit writes no index of hashes (docs/architecture.md, "Storage").
///
/// The side file holds one key per (kind, first 8 bytes of the hash, creation time, evaluation
/// rowid) in a
/// WITHOUT ROWID table, and the rowid up to which every evaluation is indexed (the watermark).
/// The indexer reads the evaluations past the watermark in large batches (the more it lags, the
/// larger and cheaper its batches) and commits their keys with the new watermark in one
/// transaction of the side file, whose locks and write-ahead log are its own: the writer of the
/// database never waits for it. A subject's history (`SubjectHistory`) reads the side keys up to
/// the watermark plus the evaluations past it (the tail, a range of rowids), and checks every
/// row it returns against the database: the side file only says where to look.
///
/// The side file is derived: missing, unreadable, of another format or not matching the
/// database (restored from a backup) at start, it is recreated empty and filled again from the
/// first evaluation, while histories are answered from the tail. Erasure and the retention
/// purge remove their keys from it through the indexer's thread (so that a batch read before
/// cannot put them back), with `secure_delete` on and the side write-ahead log truncated after
/// an erasure.
public final class SQLiteSubjectIndex: SubjectHistory, @unchecked Sendable {
    // @unchecked: `jobs`, `stopping`, `thread` and `side` are guarded by `condition` (and `side`
    // is used only on the indexer thread); `reader` by its mutex; the rest is immutable or atomic.

    /// The side file's format; another value in its `user_version` makes it rebuilt.
    static let format = 1

    /// The side file of the database at `databasePath`.
    public static func sidePath(databasePath: String) -> String {
        ((databasePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent("insightd-subjects.db")
    }

    /// How the indexer paces itself.
    public struct Pace: Sendable {
        /// Most evaluations read and indexed in one transaction of the side file.
        public var batch = 100_000
        /// After a batch that was not full, the indexer waits this long (or for a job) before
        /// reading again: under load the tail grows meanwhile, and the next batch is larger.
        public var interval: Duration = .seconds(1)

        /// The indexer thread's nice value: when the request threads and the writer keep every
        /// core busy it gets a small share and may fall behind (its lag grows, its batches with
        /// it), catching up when they leave time. (An erasure's work runs on another thread.)
        public var nice: Int32 = 19

        public init(batch: Int = 100_000, interval: Duration = .seconds(1), nice: Int32 = 19) {
            self.batch = batch
            self.interval = interval
            self.nice = nice
        }
    }

    public let databasePath: String
    public let sidePath: String
    let pace: Pace
    /// Called on the indexer thread between reading a batch and committing it (tests set it
    /// before `start()` to hold a batch there).
    var batchRead: (() -> Void)?

    private let condition = NSCondition()
    private var jobs: [(SQLiteConnection?) -> Void] = []
    private var stopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    /// Incremented each time the side file is (re)opened ready for readers; 0 while none is.
    private let generation = Atomic<Int>(0)
    private let lagCount = Atomic<Int64>(0)
    private let indexedCount = Atomic<Int64>(0)
    private let reader: Mutex<Reader>

    /// The history's connection: the database, with the side file attached as `subjects`
    /// once the indexer has it ready.
    struct Reader {
        let db: SQLiteConnection
        var attached = 0
    }

    public init(databasePath: String, pace: Pace = Pace()) throws {
        self.databasePath = databasePath
        self.sidePath = Self.sidePath(databasePath: databasePath)
        self.pace = pace
        reader = Mutex(Reader(db: try Database.open(path: databasePath, create: false)))
    }

    /// Evaluations committed to the database and not yet in the side file, as of the last batch.
    public var lag: Int64 { lagCount.load(ordering: .relaxed) }

    /// Evaluations the indexer has put in the side file since it started.
    public var indexed: Int64 { indexedCount.load(ordering: .relaxed) }

    /// Starts the indexer thread (which opens, checks or rebuilds the side file first).
    public func start() {
        condition.lock()
        defer { condition.unlock() }
        guard thread == nil, !stopping else { return }
        let thread = Thread { [self] in self.run() }
        thread.name = "insightd-subjects"
        self.thread = thread
        thread.start()
    }

    /// Runs the queued jobs, then stops the thread. Later jobs fail.
    public func stop() {
        condition.lock()
        let wasRunning = !stopping && thread != nil
        stopping = true
        condition.signal()
        condition.unlock()
        if wasRunning { finished.wait() }
    }

    /// Runs `job` on the indexer thread between two batches, with the side file's connection
    /// (nil when it cannot be opened); answers false at once if the indexer is stopping.
    @discardableResult
    func enqueue(_ job: @escaping (SQLiteConnection?) -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, thread != nil else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Runs `work` on the indexer thread with the side file, completing with its error if any.
    func submit(_ work: @escaping (SQLiteConnection) throws -> Void, completion: @escaping @Sendable (Error?) -> Void) {
        let queued = enqueue { side in
            guard let side else { return completion(StoreError.io("the subject index could not be opened")) }
            do {
                try work(side)
                completion(nil)
            } catch {
                completion(error)
            }
        }
        if !queued { completion(StoreError.io("the subject index is stopping")) }
    }

    // MARK: - The indexer thread

    private func run() {
        // Linux's nice value is per thread: `who` 0 is the calling one.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, pace.nice)
        var side: SQLiteConnection?
        while true {
            if side == nil {
                side = try? open()
                if let side { ready(side) }
            }
            condition.lock()
            let work = jobs
            jobs.removeAll()
            let stop = stopping
            condition.unlock()
            for job in work { job(side) }
            if stop && work.isEmpty { break }
            if !work.isEmpty { continue }
            var full = false, corrupt = false
            if let connection = side {
                do {
                    full = try indexBatch(connection)
                } catch let error as SQLiteError where error.isCorruption {
                    corrupt = true
                } catch {
                    full = false
                }
            }
            if corrupt {
                side = nil
                rebuild()
                continue
            }
            if !full { wait(pace.interval) }
        }
        // Closed before `stop` returns, not when this frame goes: SQLite deletes the side file's
        // WAL as its last connection closes, which would otherwise happen after the stop.
        side = nil
        finished.signal()
    }

    /// Sleeps up to `interval`, or until a job or `stop()` arrives.
    private func wait(_ interval: Duration) {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        while jobs.isEmpty && !stopping {
            if !condition.wait(until: deadline) { break }
        }
        condition.unlock()
    }

    /// Opens the side file, checked against the database; recreates it empty when it is
    /// missing, unreadable, of another format or describes other evaluations.
    func open() throws -> SQLiteConnection {
        if FileManager.default.fileExists(atPath: sidePath), let side = try? openSide(create: false), (try? isValid(side)) == true {
            return side
        }
        removeSideFiles()
        let side = try openSide(create: true)
        try side.execute(
            """
            CREATE TABLE entries (
                kind INTEGER NOT NULL, prefix BLOB NOT NULL, created_at INTEGER NOT NULL, evaluation INTEGER NOT NULL,
                PRIMARY KEY (kind, prefix, created_at, evaluation)
            ) WITHOUT ROWID;
            CREATE TABLE progress (id INTEGER PRIMARY KEY CHECK (id = 1), indexed INTEGER NOT NULL, newest INTEGER,
                                   created_at INTEGER);
            INSERT INTO progress (id, indexed, newest, created_at) VALUES (1, 0, NULL, NULL);
            PRAGMA user_version = \(Self.format);
            """)
        return side
    }

    /// A connection whose main database is the side file, with the database attached as `store`
    /// (read only by the indexer: its transactions are deferred, so they lock the side file only).
    private func openSide(create: Bool) throws -> SQLiteConnection {
        let side = try SQLiteConnection(path: sidePath, create: create)
        side.setBusyTimeout(milliseconds: 5000)
        guard try side.scalarText("PRAGMA journal_mode=WAL") == "wal" else { throw StoreError.io("\(sidePath): cannot switch to WAL mode") }
        // Derived data: a crash may lose its last batches (the watermark goes with them) but
        // not its consistency; secure_delete zeroes what erasure and retention remove.
        try side.execute("PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON; PRAGMA cache_size=-32768")
        let attach = try side.prepare("ATTACH DATABASE ? AS store")
        try attach.run(databasePath)
        return side
    }

    /// True when the side file has this format, passes `quick_check`, and the newest evaluation
    /// it indexed is still in the database with the same creation time.
    private func isValid(_ side: SQLiteConnection) throws -> Bool {
        guard try side.scalarText("PRAGMA main.user_version") == "\(Self.format)",
            try side.scalarText("PRAGMA main.quick_check") == "ok",
            let (newest, createdAt) = try side.prepare("SELECT newest, created_at FROM progress WHERE id = 1")
                .first(row: { ($0.isNull(0) ? nil : $0.int64(0), $0.int64(1)) })
        else { return false }
        guard let newest else { return true }
        let stored = try side.prepare("SELECT created_at FROM store.evaluations WHERE rowid = ?").first([newest]) { $0.int64(0) }
        return stored == createdAt
    }

    private func removeSideFiles() {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: sidePath + suffix) }
    }

    /// Makes the side file visible to readers (they attach it on their next query).
    func ready(_ side: SQLiteConnection) {
        generation.add(1, ordering: .sequentiallyConsistent)
    }

    /// Detaches readers from a corrupt side file (the indexer has closed its own connection),
    /// then deletes it: the next round recreates it.
    private func rebuild() {
        generation.store(0, ordering: .sequentiallyConsistent)
        reader.withLock { $0.detach() }
        removeSideFiles()
    }

    static func watermarkQuery(_ schema: String) -> String { "SELECT indexed FROM \(schema).progress WHERE id = 1" }

    private func watermark(_ side: SQLiteConnection) throws -> Int64 {
        try side.cached("SELECT indexed FROM progress WHERE id = 1").first { $0.int64(0) } ?? 0
    }

    /// Indexes the next batch of evaluations past the watermark; answers true if it was full
    /// (more are waiting).
    @discardableResult
    func indexBatch(_ side: SQLiteConnection) throws -> Bool {
        let from = try watermark(side)
        let newest = try side.cached("SELECT coalesce(max(rowid), 0) FROM store.evaluations").first { $0.int64(0) } ?? 0
        if newest < from {
            // The newest evaluations were deleted (everything purged) and their rowids may be
            // given again: the watermark steps back (their keys left with them).
            try side.transaction(.deferred) {
                try side.cached("UPDATE progress SET indexed = 0, newest = NULL, created_at = NULL WHERE id = 1").run()
            }
            return true
        }
        guard newest > from else {
            lagCount.store(0, ordering: .relaxed)
            return false
        }
        let through = min(newest, from + Int64(pace.batch))
        // The batch's newest row (with its creation time), which a start checks the database by.
        let last = try side.cached(
            """
            SELECT rowid, created_at FROM store.evaluations WHERE rowid > ? AND rowid <= ? ORDER BY rowid DESC LIMIT 1
            """
        ).first([from, through]) { (rowid: $0.int64(0), createdAt: $0.int64(1)) }
        batchRead?()
        // One statement: the keys of the batch's rows in key order (each leaf of the side
        // B-tree is visited once), read from the database as it writes them. It is a
        // transaction of its own, and the watermark follows in another: inside a wider
        // transaction SQLite would copy every page the insert changes into a statement journal
        // first (a 4 KiB write per leaf touched, nearly all of them in each batch). A crash
        // between the two leaves keys past the watermark, which nothing reads (a history reads
        // keys up to it) and the next batch inserts again (`OR IGNORE`).
        try side.cached(
            """
            INSERT OR IGNORE INTO entries (kind, prefix, created_at, evaluation)
            SELECT k.kind, substr(CASE k.kind WHEN 1 THEN e.account_hash WHEN 2 THEN e.device_hash
                                  ELSE e.counterparty_hash END, 1, 8) AS prefix, e.created_at, e.rowid
            FROM store.evaluations e CROSS JOIN (SELECT 1 AS kind UNION ALL SELECT 2 UNION ALL SELECT 3) k
            WHERE e.rowid > ?1 AND e.rowid <= ?2 AND prefix IS NOT NULL
            ORDER BY 1, 2, 3, 4
            """
        ).run(from, through)
        if let last {
            try side.cached("UPDATE progress SET indexed = ?, newest = ?, created_at = ? WHERE id = 1")
                .run(through, last.rowid, last.createdAt)
        } else {
            try side.cached("UPDATE progress SET indexed = ? WHERE id = 1").run(through)
        }
        indexedCount.add(through - from, ordering: .relaxed)
        lagCount.store(newest - through, ordering: .relaxed)
        return through < newest
    }

    // MARK: - Erasure and retention

    /// The rowids whose `kind` hash may be one of `hashes` according to the side file, and the
    /// watermark they are complete up to (0, with no rowid, while the side file is not ready:
    /// then every evaluation is past it).
    func candidates(_ kind: IdentifierKind, hashes: [[UInt8]]) throws -> (rowids: [Int64], watermark: Int64) {
        try reader.withLock { reader in
            guard try reader.attach(generation: generation.load(ordering: .sequentiallyConsistent), sidePath: sidePath) else {
                return ([], 0)
            }
            return try reader.db.transaction(.deferred) {
                let watermark = try reader.db.prepare(Self.watermarkQuery("subjects")).first { $0.int64(0) } ?? 0
                let lookup = try reader.db.cached(
                    "SELECT evaluation FROM subjects.entries WHERE kind = ? AND prefix = substr(?, 1, 8) AND evaluation <= ?")
                var rowids: [Int64] = []
                for hash in Set(hashes) {
                    rowids += try lookup.query([SubjectIndexEntry.code(kind), hash, watermark]) { $0.int64(0) }
                }
                return (rowids, watermark)
            }
        }
    }

    /// Removes the keys of `subject`'s hashes whose evaluation no longer carries a hash with the
    /// same prefix (those the erasure just unlinked), rewrites the side file from the keys left
    /// (`VACUUM`, through its write-ahead log), then truncates that log. It runs as a job of the
    /// indexer, after any batch read before, and holds the indexer for its duration; the work
    /// itself runs on a thread of the default priority (the indexer's is lowered, and a
    /// `VACUUM` of a large side file takes seconds).
    func erase(_ subject: ErasedSubject, completion: @escaping @Sendable (Error?) -> Void) {
        let queued = enqueue { [self] side in
            guard side != nil else { return completion(StoreError.io("the subject index could not be opened")) }
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                defer { done.signal() }
                do {
                    try self.eraseKeys(subject, in: try self.openSide(create: false))
                    completion(nil)
                } catch {
                    completion(error)
                }
            }
            done.wait()
        }
        if !queued { completion(StoreError.io("the subject index is stopping")) }
    }

    private func eraseKeys(_ subject: ErasedSubject, in side: SQLiteConnection) throws {
        try side.transaction(.deferred) {
            for kind in IdentifierKind.allCases {
                let delete = try side.prepare(Self.unlinked(kind))
                for hash in Set(subject.hashes(kind)) { try delete.run(SubjectIndexEntry.code(kind), hash) }
            }
        }
        // secure_delete zeroes what a delete frees, but not the copies of keys that B-tree
        // balancing left in the unused space of pages since (SQLite rebuilds a page without
        // clearing its gap): rewriting the file from its live keys leaves none of the erased.
        try side.execute("VACUUM")
        let busy = try side.prepare("PRAGMA main.wal_checkpoint(TRUNCATE)").first { $0.int64(0) }
        guard busy == 0 else { throw StoreError.io("the subject index's write-ahead log could not be checkpointed") }
    }

    /// Deletes the keys of (kind ?1, the prefix of hash ?2) whose evaluation is gone or carries
    /// no hash of that kind with the same prefix.
    static func unlinked(_ kind: IdentifierKind) -> String {
        """
        DELETE FROM entries WHERE kind = ?1 AND prefix = substr(?2, 1, 8) AND NOT EXISTS (
            SELECT 1 FROM store.evaluations e
            WHERE e.rowid = entries.evaluation AND substr(e.\(kind.rawValue)_hash, 1, 8) = substr(?2, 1, 8))
        """
    }

    /// Removes the keys of evaluations the retention purge deleted.
    func forget(_ entries: [SubjectIndexEntry], completion: @escaping @Sendable (Error?) -> Void) {
        guard !entries.isEmpty else { return completion(nil) }
        submit({ side in try Self.delete(entries, in: side) }, completion: completion)
    }

    /// Deletes `entries` from the side file open on `side` (its main database).
    static func delete(_ entries: [SubjectIndexEntry], in side: SQLiteConnection) throws {
        try side.transaction(.deferred) {
            let delete = try side.cached("DELETE FROM entries WHERE kind = ? AND prefix = ? AND created_at = ? AND evaluation = ?")
            for entry in entries.sorted() { try delete.run(entry.kind, entry.prefix, entry.createdAt, entry.evaluation) }
        }
    }

    /// Deletes `entries` from the side file of `databasePath`, if there is one (the purge of an
    /// operator's tool, beside or without a daemon).
    static func delete(_ entries: [SubjectIndexEntry], databasePath: String) throws {
        let path = sidePath(databasePath: databasePath)
        guard !entries.isEmpty, FileManager.default.fileExists(atPath: path) else { return }
        let side = try SQLiteConnection(path: path, create: false)
        side.setBusyTimeout(milliseconds: 5000)
        try side.execute("PRAGMA secure_delete=ON")
        try delete(entries, in: side)
    }

    /// The watermark as readers see it: every evaluation up to it is in the side file (0 while
    /// no side file is ready).
    func indexedThrough() throws -> Int64 {
        try reader.withLock { reader in
            guard try reader.attach(generation: generation.load(ordering: .sequentiallyConsistent), sidePath: sidePath) else {
                return 0
            }
            return try reader.db.prepare(Self.watermarkQuery("subjects")).first { $0.int64(0) } ?? 0
        }
    }

    // MARK: - History

    public func subjectHistory(_ query: SubjectHistoryQuery) throws -> SubjectHistoryPage {
        try reader.withLock { reader in
            let attached = try reader.attach(generation: generation.load(ordering: .sequentiallyConsistent), sidePath: sidePath)
            return try reader.db.transaction(.deferred) {
                let watermark = attached ? try reader.db.prepare(Self.watermarkQuery("subjects")).first { $0.int64(0) } ?? 0 : 0
                return try SQLiteSubjectHistory.page(query, watermark: watermark, indexed: attached, in: reader.db)
            }
        }
    }
}

extension SQLiteSubjectIndex.Reader {
    /// Attaches the side file if the indexer has one ready (of `generation`) and this connection
    /// has not yet, or detaches a side file the indexer gave up; answers whether it is attached.
    mutating func attach(generation: Int, sidePath: String) throws -> Bool {
        if generation == attached { return attached != 0 }
        detach()
        guard generation != 0 else { return false }
        try db.prepare("ATTACH DATABASE ? AS subjects").run(sidePath)
        attached = generation
        return true
    }

    mutating func detach() {
        if attached != 0 { try? db.execute("DETACH DATABASE subjects") }
        attached = 0
    }
}

/// One key of the side file: an evaluation carried a hash of `kind` starting with `prefix`.
struct SubjectIndexEntry: Hashable, Comparable, Sendable {
    let kind: Int64
    let prefix: [UInt8]
    let createdAt: Int64
    let evaluation: Int64

    init(kind: IdentifierKind, hash: [UInt8], createdAt: Int64, evaluation: Int64) {
        self.kind = Self.code(kind)
        self.prefix = Self.prefix(hash)
        self.createdAt = createdAt
        self.evaluation = evaluation
    }

    static func code(_ kind: IdentifierKind) -> Int64 {
        switch kind {
        case .account: 1
        case .device: 2
        case .counterparty: 3
        }
    }

    /// The bytes of `hash` the side file keeps: its first 8 (SQL: `substr(hash, 1, 8)`).
    static func prefix(_ hash: [UInt8]) -> [UInt8] { Array(hash.prefix(8)) }

    static func < (a: Self, b: Self) -> Bool {
        if a.kind != b.kind { return a.kind < b.kind }
        if a.prefix != b.prefix { return a.prefix.lexicographicallyPrecedes(b.prefix) }
        return (a.createdAt, a.evaluation) < (b.createdAt, b.evaluation)
    }
}
