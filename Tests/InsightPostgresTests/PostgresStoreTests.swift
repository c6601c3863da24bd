import Foundation
import InsightDomain
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import Synchronization
import XCTest

/// What is particular to the PostgreSQL store, against a real PostgreSQL 15: several instances
/// (store objects, each with its own writer and connections) on one database, a batch with a
/// failing job, the server stopped and started under a store that stays up, leadership. What
/// every backend must do is the contract's (PostgresStoreContractTests).
final class PostgresStoreTests: PostgresStoreTestCase {
    func connect() throws -> PostgresConnection { try PostgresConnection(url: settings.url) }

    static func evaluation(_ id: String, insights: [String] = [], caller: String = "c1") -> EvaluationRecord {
        EvaluationRecord(
            eventId: id, callerId: caller, environment: .production, category: .payment, createdAt: 1_000,
            reportConsumptionBy: 2_000, subject: HashedSubject(account: [1, 2], device: [3], keyId: "k1"),
            insights: insights.map {
                InsightRecord(
                    insightId: $0, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                    newestModelVersion: "2.0", outcome: .value(.high, reasons: ["activeCallDuringSession"]))
            })
    }

    /// Waits for an asynchronous store operation (30 s at most).
    func wait<T: Sendable>(
        _ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void,
        file: StaticString = #filePath, line: UInt = #line
    ) -> Result<T, StoreFailure>? {
        let box = Mutex<Result<T, StoreFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        body { result in
            box.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success else {
            XCTFail("no completion within 30 s", file: file, line: line)
            return nil
        }
        return box.withLock { $0 }
    }

    func record(_ store: PostgresStore, _ evaluation: EvaluationRecord, file: StaticString = #filePath, line: UInt = #line) {
        guard case .success = wait({ store.ledger.record(evaluation, answer: [7], completion: $0) }, file: file, line: line) else {
            return XCTFail("\(evaluation.eventId) not recorded", file: file, line: line)
        }
    }

    // MARK: Several instances on one database

    func testConflictingReportsSentAtOnceToTwoInstancesExactlyOneWins() throws {
        let a = try instance(), b = try instance()
        let events = (0..<40).map { "e\($0)" }
        for id in events { record(a, Self.evaluation(id, insights: ["\(id)-i"])) }
        let results = Mutex<[String: [ConsumptionResult]]>([:])
        let failures = Mutex<[StoreFailure]>([])
        let done = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: events.count * 2) { i in
            let id = events[i / 2]
            let first = i % 2 == 0
            done.enter()
            (first ? a : b).ledger.report(
                ConsumptionReport(
                    eventId: id, callerId: "c1", environment: .production,
                    status: first ? .usedIncreasedFriction : .notUsedNotNeeded, insightIdsUsed: first ? ["\(id)-i"] : [],
                    reportedAt: 1_500)
            ) { result in
                switch result {
                case .success(let outcome): results.withLock { $0[id, default: []].append(outcome) }
                case .failure(let failure): failures.withLock { $0.append(failure) }
                }
                done.leave()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.withLock { $0 }, [], "every report is answered")
        for id in events {
            let outcomes = results.withLock { $0[id] ?? [] }
            XCTAssertEqual(outcomes.count, 2, id)
            XCTAssertEqual(outcomes.filter { $0 == .recorded(.onTime) }.count, 1, "\(id): \(outcomes)")
            XCTAssertEqual(outcomes.filter { if case .conflict = $0 { true } else { false } }.count, 1, "\(id): \(outcomes)")
        }
        XCTAssertEqual(try connect().query("SELECT count(*) FROM consumption_reports").first?.int64(0), Int64(events.count))
    }

    func testOneIdempotencyKeyOnTwoInstancesIsProcessedOnceAndReplayedElsewhere() throws {
        let a = try instance(), b = try instance()
        record(a, Self.evaluation("e1", insights: ["a", "b"]))
        let results = Mutex<[Result<LabelSubmissionResult, StoreFailure>]>([])
        let done = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            done.enter()
            (i % 2 == 0 ? a : b).ledger.submit(
                LabelSubmission(
                    callerId: "ops", environment: .production,
                    items: [Label(insightId: "a", outcome: .confirmedFraud, fraudType: .techSupportScam, discoveredAt: "2027-01-15")],
                    idempotencyKeyHash: Array("k1".utf8), bodyHash: Array("b1".utf8), receivedAt: 5_000)
            ) { result in
                results.withLock { $0.append(result) }
                done.leave()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        let all = results.withLock { $0 }
        XCTAssertEqual(all.filter { $0 == .success(.processed([.accepted], replayed: false)) }.count, 1, "\(all)")
        XCTAssertEqual(all.filter { $0 == .success(.processed([.accepted], replayed: true)) }.count, 15, "\(all)")

        // Two keys labelling one insight at once on two instances: one label, the other sees it.
        let other = Mutex<[Result<LabelSubmissionResult, StoreFailure>]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            done.enter()
            (i == 0 ? a : b).ledger.submit(
                LabelSubmission(
                    callerId: "ops", environment: .production,
                    items: [
                        Label(
                            insightId: "b", outcome: i == 0 ? .confirmedFraud : .confirmedLegitimate,
                            fraudType: i == 0 ? .techSupportScam : nil, discoveredAt: "2027-01-15")
                    ],
                    idempotencyKeyHash: Array("key\(i)".utf8), bodyHash: Array("b".utf8), receivedAt: 5_000)
            ) { result in
                other.withLock { $0.append(result) }
                done.leave()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        let pair = other.withLock { $0 }
        XCTAssertEqual(pair.filter { $0 == .success(.processed([.accepted], replayed: false)) }.count, 1, "\(pair)")
        XCTAssertEqual(pair.filter { $0 == .success(.processed([.conflict], replayed: false)) }.count, 1, "\(pair)")
        XCTAssertEqual(try connect().query("SELECT count(*) FROM labels").first?.int64(0), 2)
    }

    // MARK: Ids PostgreSQL text cannot hold

    func testAnIdHoldingANulNamesNothing() throws {
        let store = try instance()
        record(store, Self.evaluation("e1", insights: ["a", "b"]))
        let report = { (eventId: String, ids: [String]) in
            self.wait {
                store.ledger.report(
                    ConsumptionReport(
                        eventId: eventId, callerId: "c1", environment: .production,
                        status: .notUsedNotNeeded, insightIdsUsed: ids,
                        reportedAt: 1_500), completion: $0)
            }
        }
        XCTAssertEqual(report("e1\u{0}x", []), .success(.evaluationNotFound), "not cut to e1 at the NUL")
        XCTAssertEqual(report("e1", ["a\u{0}", "b"]), .success(.unknownInsightIds(["a\u{0}"])))
        let labelled = wait {
            store.ledger.submit(
                LabelSubmission(
                    callerId: "ops", environment: .production,
                    items: [
                        nil, Label(insightId: "a\u{0}", outcome: .confirmedLegitimate, fraudType: nil, discoveredAt: "2027-01-15"),
                        Label(insightId: "a", outcome: .confirmedLegitimate, fraudType: nil, discoveredAt: "2027-01-15")
                    ],
                    idempotencyKeyHash: [1], bodyHash: [2], receivedAt: 5_000), completion: $0)
        }
        XCTAssertEqual(labelled, .success(.processed([.invalid, .unknownInsight, .accepted], replayed: false)))
        XCTAssertEqual(report("e1", ["a", "b"]), .success(.recorded(.onTime)))
    }

    func testInstancesTakingTheSameLocksInOtherOrdersAllComplete() throws {
        // Each batch takes its jobs' locks job after job, so two instances' batches can wait for
        // each other: the server breaks the deadlock, and the writer sends the batch again.
        let a = try instance(), b = try instance()
        let insights = (0..<12).map { "i\($0)" }
        // Three evaluations of four insights (an evaluation holds at most four served ones).
        for k in 0..<3 { record(a, Self.evaluation("e\(k + 1)", insights: Array(insights[(k * 4)..<(k * 4 + 4)]))) }
        let failures = Mutex<[StoreFailure]>([])
        let done = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            let pair = [insights[i % 12], insights[(i * 7 + 5) % 12]]
            let items = (i % 2 == 0 ? pair : pair.reversed()).map {
                Label(insightId: $0, outcome: .confirmedLegitimate, fraudType: nil, discoveredAt: "2027-01-15")
            }
            done.enter()
            (i % 2 == 0 ? a : b).ledger.submit(
                LabelSubmission(
                    callerId: "ops", environment: .production, items: items, idempotencyKeyHash: Array("k\(i)".utf8),
                    bodyHash: [1], receivedAt: 5_000)
            ) { result in
                if case .failure(let failure) = result { failures.withLock { $0.append(failure) } }
                done.leave()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(try connect().query("SELECT count(*) FROM labels").first?.int64(0), 12)
    }

    // MARK: The writer

    func testABatchWithAFailingJobCommitsTheOthers() throws {
        let commits = Mutex<[PostgresWriter.Commit]>([])
        let store = try instance(observer: { commit in commits.withLock { $0.append(commit) } })
        record(store, Self.evaluation("dup"))
        // Holds the lock of one evaluation's reports: the writer's next batch waits on it, and
        // the jobs queued meanwhile make the batch after it, together.
        let blocker = try connect()
        try blocker.execute("BEGIN")
        try blocker.query("SELECT pg_advisory_xact_lock($1)", [.int64(SQLValues.lockKey("report", "blocked"))])
        let blocked = DispatchSemaphore(value: 0)
        store.ledger.report(
            ConsumptionReport(
                eventId: "blocked", callerId: "c1", environment: .production,
                status: .notUsedNotNeeded, insightIdsUsed: [], reportedAt: 1)
        ) { _ in blocked.signal() }
        let deadline = Date(timeIntervalSinceNow: 20)
        while try connect().query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").first?.int64(0) == 0 {
            guard Date() < deadline else { return XCTFail("the writer never waited on the lock") }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let results = Mutex<[String: Result<Void, StoreFailure>]>([:])
        let done = DispatchGroup()
        let ids = (0..<10).map { "e\($0)" }
        for id in ids.prefix(5) + ["dup"] + ids.suffix(5) {
            done.enter()
            store.ledger.record(Self.evaluation(id, insights: ["\(id)-i"]), answer: [7]) { result in
                results.withLock { $0[id] = result.map { _ in () } }
                done.leave()
            }
        }
        try blocker.execute("COMMIT")
        XCTAssertEqual(blocked.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let all = results.withLock { $0 }
        for id in ids {
            guard case .success = all[id] else { XCTFail("\(id) failed: \(String(describing: all[id]))"); continue }
        }
        guard case .failure(.unavailable) = all["dup"] else { return XCTFail("the duplicate: \(String(describing: all["dup"]))") }
        XCTAssertEqual(try connect().query("SELECT count(*) FROM evaluations").first?.int64(0), 11)
        XCTAssertEqual(try connect().query("SELECT count(*) FROM insights").first?.int64(0), 10)
        let batch = commits.withLock { $0 }.first { $0.size == 11 }
        XCTAssertEqual(batch?.failed, 1, "one batch of the 11: \(commits.withLock { $0 }.map { ($0.size, $0.failed) })")
        XCTAssertEqual(batch?.firstError, "PostgreSQL error 23505 (constraint evaluations_pkey)", "no value in the log line")
    }

    func testAFullQueueAnswersOverloaded() throws {
        var settings = self.settings!
        settings.writeQueueCapacity = 2
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey())
        let results = Mutex<[Result<Void, StoreFailure>]>([])
        let done = DispatchGroup()
        for i in 0..<3 {
            done.enter()
            store.ledger.record(Self.evaluation("e\(i)"), answer: [7]) { result in
                results.withLock { $0.append(result.map { _ in () }) }
                done.leave()
            }
        }
        XCTAssertEqual(results.withLock { $0 }.count, 1, "the third is refused at once, before the writer runs")
        XCTAssertEqual(results.withLock { $0 }.first.map { if case .failure(.overloaded) = $0 { true } else { false } }, true)
        store.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        store.stop()
        XCTAssertEqual(results.withLock { $0 }.filter { if case .success = $0 { true } else { false } }.count, 2)
    }

    // MARK: Reads

    func testReadsRunSideBySideOnThePool() throws {
        var settings = self.settings!
        settings.readConnections = 4
        let pool = PostgresReadPool(settings: settings)
        // Four reads of 0.5 s at once take about 0.5 s, not 2 s: none waits for another's connection.
        let started = Date()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do { _ = try pool.read { db in try db.query("SELECT pg_sleep(0.5)") } } catch { XCTFail("\(error)") }
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.6)
        // A fifth waits for a connection to come back, then runs.
        let fifth = Date()
        DispatchQueue.concurrentPerform(iterations: 5) { _ in
            do { _ = try pool.read { db in try db.query("SELECT pg_sleep(0.3)") } } catch { XCTFail("\(error)") }
        }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(fifth), 0.55, "at most four at a time")
        pool.close()
    }

    // MARK: Leadership

    func testOneInstanceLeadsUntilItReleasesOrLosesItsSession() throws {
        let a = try instance(), b = try instance()
        XCTAssertTrue(a.leadership.tryLead())
        XCTAssertFalse(b.leadership.tryLead())
        XCTAssertTrue(a.leadership.tryLead(), "still leading")
        a.leadership.release()
        XCTAssertTrue(b.leadership.tryLead(), "taken once released")
        XCTAssertFalse(a.leadership.tryLead())
        // The leader's session ends (its instance died, or the server dropped it): another takes over.
        try connect().query(
            """
            SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = $1
            """, [.int64(PostgresJobLeadership.lockKey & 0xFFFF_FFFF)])
        let deadline = Date(timeIntervalSinceNow: 10)
        while !a.leadership.tryLead() {
            guard Date() < deadline else { return XCTFail("the lead stayed taken after the leader's session ended") }
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTAssertFalse(b.leadership.tryLead(), "the old leader knows it lost the lead")
    }

    // MARK: The server stopped and started

    func testWhileTheServerIsDownEveryOperationFailsFastThenTheSameStoreRecovers() throws {
        let own = try TemporaryPostgres()
        defer { own.destroy() }
        var settings = PostgresSettings(url: own.url())
        settings.connectTimeoutSeconds = 2
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey())
        store.start()
        defer { store.stop() }
        let registration = try PostgresStore.registration(settings: settings, now: 1)
        let (_, key) = try registration.create(
            name: "c", tenant: "default", environment: .production, roles: [.evaluate],
            rate: 1, burst: 1, now: 1, callerId: "c1")
        record(store, Self.evaluation("before"))
        XCTAssertNotNil(try store.credentials.credential(keyId: key.keyId))
        XCTAssertTrue(store.isReachable)

        try own.stop(mode: .immediate)
        for attempt in 0..<3 {
            let started = Date()
            let written = wait { store.ledger.record(Self.evaluation("down\(attempt)"), answer: [7], completion: $0) }
            guard case .failure(.unavailable) = written else { return XCTFail("a write while down: \(String(describing: written))") }
            XCTAssertThrowsError(try store.credentials.credential(keyId: key.keyId)) { error in
                guard case .unavailable = error as? StoreFailure else { return XCTFail("\(error)") }
            }
            XCTAssertThrowsError(try store.administration.callers(tenant: "default"))
            XCTAssertFalse(store.isReachable)
            XCTAssertFalse(store.leadership.tryLead())
            XCTAssertLessThan(Date().timeIntervalSince(started), 5, "attempt \(attempt) failed fast")
        }

        try own.start()
        let deadline = Date(timeIntervalSinceNow: 20)
        while true {
            if case .success = wait({ store.ledger.record(Self.evaluation("after"), answer: [7], completion: $0) }) { break }
            guard Date() < deadline else { return XCTFail("the writer did not reconnect by itself") }
            Thread.sleep(forTimeInterval: 0.2)
        }
        XCTAssertEqual(try store.credentials.credential(keyId: key.keyId)?.caller.callerId, "c1", "reads reconnect too")
        XCTAssertTrue(store.isReachable)
        XCTAssertTrue(store.leadership.tryLead())
        let stored = try PostgresConnection(url: own.url()).query("SELECT event_id FROM evaluations ORDER BY number")
            .map { $0.text(0) ?? "" }
        XCTAssertEqual(stored, ["before", "after"], "what was acknowledged is there; nothing failed was stored")
    }

    // MARK: Receipts

    /// Two writers that extend one chain, each committing after the other: each finds its
    /// cached tip taken (the head's statement fails on its sequence), reads the tip again and
    /// signs anew. This is what a writer meets after a commit whose acknowledgement was lost; the
    /// chain stays one line, every head following the one before it.
    func testAWriterWhoseTipWasTakenReadsItAgainAndTheChainNeverForks() throws {
        let keys = ReceiptIssuer.withEphemeralKey(instance: "shared").keys
        let a = try instance(receipts: ReceiptIssuer(instance: "shared", keys: keys, clock: SystemClock()))
        let b = try instance(receipts: ReceiptIssuer(instance: "shared", keys: keys, clock: SystemClock()))
        for i in 0..<6 { record(i % 2 == 0 ? a : b, Self.evaluation("e\(i)")) }
        let chain = ReceiptChain(instance: "shared", tenant: Tenant.defaultName, environment: "production")
        let heads = try a.receiptLog.heads(of: chain, from: 0, limit: 100, withLeaves: false).map(\.signed)
        XCTAssertEqual(heads.map(\.head.sequence), Array(0..<6))
        XCTAssertNil(heads[0].head.previous)
        for k in 1..<heads.count { XCTAssertEqual(heads[k].head.previous, heads[k - 1].hash, "head \(k)") }
        XCTAssertEqual(try connect().query("SELECT count(*) FROM evaluations").first?.int64(0), 6)
    }

    // MARK: Privacy

    func testAKeysSecretNeverReachesTheServersFiles() throws {
        let own = try TemporaryPostgres()
        defer { own.destroy() }
        let settings = PostgresSettings(url: own.url())
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey())
        store.start()
        let registration = try PostgresStore.registration(settings: settings, now: 1)
        let (_, key) = try registration.create(
            name: "c", tenant: "default", environment: .production, roles: [.evaluate],
            rate: 1, burst: 1, now: 1, callerId: "c1")
        record(store, Self.evaluation("e1", insights: ["i1"]))
        store.stop()
        try PostgresConnection(url: own.url()).execute("CHECKPOINT")
        try own.stop(mode: .fast)
        var scanned = 0
        let enumerator = FileManager.default.enumerator(atPath: own.dataDirectory)
        while let name = enumerator?.nextObject() as? String {
            guard let data = FileManager.default.contents(atPath: own.dataDirectory + "/" + name) else { continue }
            scanned += data.count
            XCTAssertNil(data.range(of: Data(key.secret.utf8)), "the secret in \(name)")
        }
        XCTAssertGreaterThan(scanned, 1_000_000, "the cluster's files were read")
    }

    /// Two instances share the registered key ids; a refusal registers nothing.
    func testHashKeyIdsAreRegisteredOnceAndARefusalAddsNothing() throws {
        let first = try instance(), second = try instance()
        try first.hashKeyRegistry.reconcile(now: 5) { registered in
            XCTAssertEqual(registered, [])
            return ["k1", "k2"]
        }
        struct Refused: Error {}
        XCTAssertThrowsError(
            try second.hashKeyRegistry.reconcile(now: 6) { registered in
                XCTAssertEqual(registered, ["k1", "k2"])
                throw Refused()
            })
        try second.hashKeyRegistry.reconcile(now: 7) { _ in ["k3"] }
        XCTAssertEqual(
            try connect().query("SELECT key_id, registered_at FROM hash_keys ORDER BY key_id")
                .map { "\($0.text(0) ?? "")@\($0.int64(1) ?? 0)" }, ["k1@5", "k2@5", "k3@7"])
    }
}
