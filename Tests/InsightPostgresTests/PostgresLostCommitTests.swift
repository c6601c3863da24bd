import Foundation
import InsightDomain
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import Synchronization
import XCTest

/// A batch whose connection breaks after it was sent (the primary crashed, or failed over):
/// the writer learns what became of it from its commit mark, never completes a job that is not
/// known to be committed, sends again what did not commit, and completes an evaluation that did.
final class PostgresLostCommitTests: PostgresStoreTestCase {
    // MARK: The decision, as values

    func testTheOutcomeIsReadFromTheMark() {
        XCTAssertEqual(CommitMark.outcome(marked: 7, lost: 7), .committed)
        XCTAssertEqual(CommitMark.outcome(marked: 8, lost: 7), .committed, "(never happens: batches go one at a time)")
        XCTAssertEqual(CommitMark.outcome(marked: 6, lost: 7), .notCommitted)
        XCTAssertEqual(CommitMark.outcome(marked: 0, lost: 1), .notCommitted, "the check inserted the row: the first batch never committed")
        XCTAssertEqual(CommitMark.outcome(marked: nil, lost: 3), .notCommitted)
    }

    func testOnlyACommittedEvaluationIsAnsweredSuccess() {
        XCTAssertNoThrow(try CommitMark.answer(.committed, isEvaluation: true).get())
        for (outcome, isEvaluation) in [
            (CommitOutcome.committed, false), (.notCommitted, true), (.notCommitted, false),
            (.unknown("x"), true), (.unknown("x"), false)
        ] {
            guard case .failure(.unavailable) = CommitMark.answer(outcome, isEvaluation: isEvaluation) else {
                return XCTFail("\(outcome), evaluation \(isEvaluation)")
            }
        }
        guard case .failure(.unavailable(let reason)) = CommitMark.answer(.committed, isEvaluation: false) else { return XCTFail() }
        XCTAssertTrue(reason.contains("same ids"), reason)
    }

    func testEachBatchIsNumberedAfterTheLast() {
        var mark = CommitMark()
        let first = mark.next(now: 10), second = mark.next(now: 11)
        XCTAssertEqual(first.parameters[1], .int64(1))
        XCTAssertEqual(second.parameters[1], .int64(2))
        XCTAssertEqual(first.parameters[0], second.parameters[0], "one row per writer")
        XCTAssertNotEqual(CommitMark().writer, mark.writer, "each writer a row of its own")
    }

    // MARK: The check, on a real server

    func testTheCheckWaitsForABatchStillRunningThenSaysWhatItDid() throws {
        let store = try instance()
        _ = store
        var mark = CommitMark()
        let lost = try PostgresConnection(url: settings.url)
        func send(_ statement: WriteStatement) throws { try lost.query(statement.sql, statement.parameters) }
        func checkAside() -> AsideCheck {
            let aside = AsideCheck(), url = settings.url, checking = mark
            Thread {
                aside.outcome = try? checking.check(on: PostgresConnection(url: url), now: 2)
                aside.done.signal()
            }.start()
            return aside
        }

        /// A batch sent and left open, a check started beside it (it must wait for the batch), then
        /// the batch ended with `end`: what the check says once it may.
        func outcome(ifTheBatchEnds end: String, file: StaticString = #filePath, line: UInt = #line) throws
            -> CommitOutcome?
        {
            try lost.execute("BEGIN")
            try send(mark.next(now: 1))
            let aside = checkAside()
            XCTAssertEqual(aside.done.wait(timeout: .now() + 0.5), .timedOut, "the check waits for the batch", file: file, line: line)
            try lost.execute(end)
            XCTAssertEqual(aside.done.wait(timeout: .now() + 10), .success, file: file, line: line)
            return aside.outcome
        }

        // The writer's first batch, still running: the check waits for the row it inserts.
        XCTAssertEqual(try outcome(ifTheBatchEnds: "ROLLBACK"), .notCommitted)
        // A later batch that commits while the check waits.
        XCTAssertEqual(try outcome(ifTheBatchEnds: "COMMIT"), .committed)
        // One that rolls back.
        XCTAssertEqual(try outcome(ifTheBatchEnds: "ROLLBACK"), .notCommitted)

        // A batch that holds the row longer than the check's lock_timeout: no answer.
        try lost.execute("BEGIN")
        try send(mark.next(now: 1))
        let impatient = try PostgresConnection(url: settings.url)
        try impatient.execute("SET lock_timeout = 100")
        XCTAssertThrowsError(try mark.check(on: impatient, now: 2))
        try lost.execute("ROLLBACK")
    }

    // MARK: The writer

    /// The writer's backend waiting on the advisory lock a report needs, terminated: its batch
    /// was lost before its commit. The writer finds it did not commit and sends it again, which
    /// commits once the lock is free: the report is answered as if nothing had happened.
    func testABatchLostBeforeItsCommitIsSentAgain() throws {
        let store = try instance()
        record(store, "e1")
        let blocker = try PostgresConnection(url: settings.url)
        try blocker.execute("BEGIN")
        try blocker.query("SELECT pg_advisory_xact_lock($1)", [.int64(SQLValues.lockKey("report", "e1"))])
        let answered = DispatchSemaphore(value: 0), result = Mutex<Result<ConsumptionResult, StoreFailure>?>(nil)
        store.ledger.report(
            ConsumptionReport(
                eventId: "e1", callerId: "c1", environment: .production, status: .notUsedNotNeeded,
                insightIdsUsed: [], reportedAt: 1_500)
        ) { outcome in
            result.withLock { $0 = outcome }
            answered.signal()
        }
        let first = try waitingBackend(lockType: "advisory")
        try blocker.query("SELECT pg_terminate_backend($1::int)", [.int64(first)])
        _ = try waitingBackend(lockType: "advisory", excluding: first)
        XCTAssertEqual(answered.wait(timeout: .now() + 0.2), .timedOut, "not answered while it waits")
        try blocker.execute("COMMIT")
        XCTAssertEqual(answered.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(result.withLock { $0 }, .success(.recorded(.onTime)))
        XCTAssertEqual(try count("consumption_reports"), 1)
    }

    /// With a synchronous standby named that never comes, a commit waits for it after it is
    /// written: the writer's backend, terminated there, has committed, and the client cannot know.
    /// The check waits too (for the same standby), and once the standby is no longer required it
    /// finds the batch committed: the evaluation is answered success without being sent again,
    /// and a report (whose answer the connection lost) unavailable, stored, and answered alike
    /// when sent again.
    func testABatchLostAfterItsCommitCompletesItsEvaluationButNotItsReport() throws {
        let own = try TemporaryPostgres()
        defer { own.destroy() }
        settings = PostgresSettings(url: own.url())
        let store = try instance()
        record(store, "e1")
        let admin = try own.connect()

        for job in ["evaluation", "report"] {
            try admin.execute("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
            try admin.execute("SELECT pg_reload_conf()")
            // Each backend reads the new setting when the signal reaches it, before its next statement.
            Thread.sleep(forTimeInterval: 0.5)
            let answered = DispatchSemaphore(value: 0), failure = Mutex<StoreFailure?>(nil)
            let report = ConsumptionReport(
                eventId: "e1", callerId: "c1", environment: .production, status: .notUsedNotNeeded,
                insightIdsUsed: [], reportedAt: 1_500)
            if job == "evaluation" {
                store.ledger.record(PostgresStoreTests.evaluation("e2"), answer: [7]) { outcome in
                    if case .failure(let f) = outcome { failure.withLock { $0 = f } }
                    answered.signal()
                }
            } else {
                store.ledger.report(report) { outcome in
                    if case .failure(let f) = outcome { failure.withLock { $0 = f } }
                    answered.signal()
                }
            }
            let committing = try waitingBackend(event: "SyncRep", on: admin)
            try admin.query("SELECT pg_terminate_backend($1::int)", [.int64(committing)])
            // The check's own commit waits for the standby too: it has not answered yet.
            _ = try waitingBackend(event: "SyncRep", excluding: committing, on: admin)
            XCTAssertEqual(answered.wait(timeout: .now() + 0.2), .timedOut)
            try admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
            try admin.execute("SELECT pg_reload_conf()")
            XCTAssertEqual(answered.wait(timeout: .now() + 30), .success)
            if job == "evaluation" {
                XCTAssertNil(failure.withLock { $0 }, "a committed evaluation is answered success")
                XCTAssertEqual(try count("evaluations", on: admin), 2, "stored once, not sent again")
            } else {
                guard case .unavailable(let reason)? = failure.withLock({ $0 }) else {
                    return XCTFail("a committed report whose answer was lost: \(String(describing: failure.withLock { $0 }))")
                }
                XCTAssertTrue(reason.contains("same ids"), reason)
                XCTAssertEqual(try count("consumption_reports", on: admin), 1, "it committed")
                let again = Mutex<Result<ConsumptionResult, StoreFailure>?>(nil)
                let done = DispatchSemaphore(value: 0)
                store.ledger.report(report) { outcome in
                    again.withLock { $0 = outcome }; done.signal()
                }
                XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
                XCTAssertEqual(again.withLock { $0 }, .success(.alreadyRecorded), "sent again, it finds what committed")
            }
        }
    }

    /// The server gone for good while a batch waits: no server answers the check within
    /// `failoverWaitSeconds`, and every job of the batch is answered unavailable.
    func testWhenNoServerAnswersTheLostBatchIsAnsweredUnavailable() throws {
        let own = try TemporaryPostgres()
        defer { own.destroy() }
        settings = PostgresSettings(url: own.url())
        settings.failoverWaitSeconds = 1
        let store = try instance()
        record(store, "e1")
        let blocker = try own.connect()
        try blocker.execute("BEGIN")
        try blocker.query("SELECT pg_advisory_xact_lock($1)", [.int64(SQLValues.lockKey("report", "e1"))])
        let answered = DispatchSemaphore(value: 0), result = Mutex<Result<ConsumptionResult, StoreFailure>?>(nil)
        store.ledger.report(
            ConsumptionReport(
                eventId: "e1", callerId: "c1", environment: .production, status: .notUsedNotNeeded,
                insightIdsUsed: [], reportedAt: 1_500)
        ) { outcome in
            result.withLock { $0 = outcome }
            answered.signal()
        }
        _ = try waitingBackend(lockType: "advisory", on: try own.connect())
        let stopped = Date()
        try own.stop(mode: .immediate)
        XCTAssertEqual(answered.wait(timeout: .now() + 30), .success)
        XCTAssertGreaterThan(Date().timeIntervalSince(stopped), 0.9, "it looked for a server for the wait")
        guard case .failure(.unavailable(let reason))? = result.withLock({ $0 }) else {
            return XCTFail("\(String(describing: result.withLock { $0 }))")
        }
        XCTAssertTrue(reason.contains("no server that takes writes answered"), reason)
        try own.start()
        XCTAssertEqual(try count("consumption_reports", on: own.connect()), 0)
    }

    /// The server gone between two batches and back a moment later (a standby promoted): the
    /// next batch waits for it within `failoverWaitSeconds` instead of failing at once, whether
    /// the writer sees its connection lost before sending (`poll`) or while sending.
    func testABatchAfterTheServerWentAwayWaitsForItWithinTheFailoverWait() throws {
        let own = try TemporaryPostgres()
        defer { own.destroy() }
        settings = PostgresSettings(url: own.url())
        settings.failoverWaitSeconds = 10
        let store = try instance()
        record(store, "e1")
        try own.stop(mode: .immediate)
        let restarted = DispatchSemaphore(value: 0)
        Thread {
            Thread.sleep(forTimeInterval: 0.5)
            try? own.start()
            restarted.signal()
        }.start()
        record(store, "e2")
        XCTAssertEqual(restarted.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try count("evaluations", on: own.connect()), 2)
    }

    // MARK: Helpers

    private func record(_ store: PostgresStore, _ id: String) {
        let done = DispatchSemaphore(value: 0), ok = Mutex(false)
        store.ledger.record(PostgresStoreTests.evaluation(id, insights: ["\(id)-i"]), answer: [7]) { result in
            if case .success = result { ok.withLock { $0 = true } }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertTrue(ok.withLock { $0 }, "\(id) recorded")
    }

    private func count(_ table: String, on connection: PostgresConnection? = nil) throws -> Int64? {
        try (connection ?? PostgresConnection(url: settings.url)).query("SELECT count(*) FROM \(table)").first?.int64(0)
    }

    /// The pid of the insightd backend that waits (on a lock of `lockType`, or on `event`), other
    /// than `excluding`, once there is one (20 s at most).
    private func waitingBackend(
        lockType: String? = nil, event: String? = nil, excluding: Int64 = 0,
        on connection: PostgresConnection? = nil
    ) throws -> Int64 {
        let observer = try connection ?? PostgresConnection(url: settings.url)
        let deadline = Date(timeIntervalSinceNow: 20)
        while Date() < deadline {
            let rows = try observer.query(
                """
                SELECT a.pid FROM pg_stat_activity a
                WHERE a.application_name = 'insightd' AND a.pid <> pg_backend_pid() AND a.pid <> $3::int
                  AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted AND l.locktype = $1::text))
                  AND ($2::text IS NULL OR a.wait_event = $2::text)
                """, [lockType.map { .text($0) }, event.map { .text($0) }, .int64(excluding)])
            if let pid = rows.first?.int64(0) { return pid }
            Thread.sleep(forTimeInterval: 0.01)
        }
        struct NoWaiter: Error {}
        throw NoWaiter()
    }
}

/// A check run on a thread of its own while the test holds the row it waits for.
private final class AsideCheck: @unchecked Sendable {
    // @unchecked: `outcome` is written before `done` is signalled and read after it is waited for.
    var outcome: CommitOutcome?
    let done = DispatchSemaphore(value: 0)
}
