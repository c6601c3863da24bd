import Foundation
import InsightDomain
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import XCTest

/// PostgreSQL's CPU per stored evaluation, as the writer sends a batch (pipeline mode, one sync,
/// `synchronous_commit` on): one statement per evaluation against one merged statement for the
/// batch, at several batch sizes, alternating so that the tables' growth weighs on both alike.
/// CPU is read from /proc for the session's backend and for the whole server (every process of
/// the cluster: backend, WAL writer, checkpointer, …). A benchmark, not a test:
/// `INSIGHTD_BENCH_FIGURES=1 swift test --filter PostgresMergedInsertFiguresTests`.
final class PostgresMergedInsertFiguresTests: XCTestCase {
    func testServerCPUPerEvaluationOneStatementEachAgainstOneMergedStatement() throws {
        try XCTSkipUnless(
            ProcessInfo.processInfo.environment["INSIGHTD_BENCH_FIGURES"] == "1",
            "a benchmark (INSIGHTD_BENCH_FIGURES=1)")
        let server = try TemporaryPostgres.shared()
        let settings = PostgresSettings(url: server.url(database: try server.createDatabase()))
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey(), observer: nil)
        store.stop()
        let connection = try settings.connect()
        let backend = Int(try connection.query("SELECT pg_backend_pid()").first!.int64(0)!)
        let postmaster = try Self.postmaster(server)
        let perRun = Int(ProcessInfo.processInfo.environment["INSIGHTD_BENCH_EVALUATIONS"] ?? "") ?? 6_144
        var serial = 0
        var lines: [String] = []
        let batchSizes = (ProcessInfo.processInfo.environment["INSIGHTD_BENCH_BATCHES"] ?? "1,16,64,128")
            .split(separator: ",").compactMap { Int($0) }
        for batchSize in batchSizes {
            var figures: [Bool: (backend: Double, server: Double, wal: Double, wall: Double, n: Int)] = [:]
            let only = ProcessInfo.processInfo.environment["INSIGHTD_BENCH_ONLY"]
            for round in 0..<4 {
                let merged = only.map { $0 == "merged" } ?? (round % 2 == 1)
                let ticksBefore = Self.ticks(backend), serverBefore = Self.serverTicks(postmaster)
                let walBefore = try connection.query("SELECT pg_current_wal_insert_lsn()::text").first!.text(0)!
                let started = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<(perRun / batchSize) {
                    let rows = try (0..<batchSize).map { _ in
                        serial += 1
                        return try EvaluationRows(PostgresWriterFiguresTests.evaluation(serial))
                    }
                    let statements = merged && batchSize > 1 ? [EvaluationRows.statement(merging: rows)] : rows.map(\.statement)
                    let queries = try statements.map { PostgresQuery.prepared(try connection.prepare($0.name, $0.sql), $0.parameters) }
                    for result in try connection.pipeline(queries) { _ = try result.get() }
                }
                let wall = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                let wal = try connection.query(
                    "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint",
                    [.text(walBefore)]
                ).first!.int64(0)!
                let n = (perRun / batchSize) * batchSize
                var sum = figures[merged] ?? (0, 0, 0, 0, 0)
                sum.backend += Double(Self.ticks(backend) - ticksBefore)
                sum.server += Double(Self.serverTicks(postmaster) - serverBefore)
                sum.wal += Double(wal)
                sum.wall += wall
                sum.n += n
                figures[merged] = sum
            }
            let tick = 1e6 / Double(sysconf(Int32(_SC_CLK_TCK)))
            for merged in [false, true] where batchSize > 1 || !merged {
                guard let f = figures[merged] else { continue }
                let n = Double(f.n)
                lines.append(
                    String(
                        format: "batch %3d %@: backend %.1f µs, server %.1f µs CPU per evaluation, WAL %.0f B, %.0f evaluations/s",
                        batchSize, merged ? "merged      " : "one each    ", f.backend * tick / n, f.server * tick / n,
                        f.wal / n, n / f.wall))
            }
        }
        print("PostgreSQL CPU per stored evaluation (2 insights, 3 hashes):\n" + lines.joined(separator: "\n"))
        XCTAssertEqual(try connection.query("SELECT count(*) FROM evaluations").first?.int64(0), Int64(serial))
    }

    /// The postmaster's pid (first line of postmaster.pid).
    static func postmaster(_ server: TemporaryPostgres) throws -> Int {
        let text = try String(contentsOfFile: server.dataDirectory + "/postmaster.pid", encoding: .utf8)
        return Int(text.split(separator: "\n")[0])!
    }

    /// User and system CPU ticks of `pid` (utime + stime, /proc/pid/stat fields 14 and 15).
    static func ticks(_ pid: Int) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, so utime (14) and stime (15) are at 11 and 12.
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    /// CPU ticks of the postmaster and every child of it.
    static func serverTicks(_ postmaster: Int) -> Int {
        var total = ticks(postmaster)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int(entry),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if Int(fields[1]) == postmaster { total += ticks(pid) }
        }
        return total
    }
}
