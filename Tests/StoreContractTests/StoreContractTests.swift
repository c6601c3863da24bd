import Foundation
import InsightDomain
import InsightStorage
import InsightStoreFakes
import StoreContract
import XCTest


/// The contract against the SQLite stores, on a real database file in a temporary directory.
final class SQLiteStoreContractTests: XCTestCase {
    func makeStores() throws -> StoreSet {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("contract-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("insightd.db").path
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let receipts = ReceiptIssuer.withEphemeralKey(instance: "sqlite-contract")
        receipts.resume(after: try SQLiteReceiptLog.tip(of: receipts.instance, in: db))
        let writer = GroupCommitWriter(connection: db, receipts: receipts)
        writer.start()
        let administration = try SQLiteAdministration(path: path, writer: writer)
        // The indexer runs as in the daemon: each case reads some evaluations from the side
        // file and others from the tail, as the indexer's pace and the machine's load make it.
        let subjects = try SQLiteSubjectIndex(databasePath: path, pace: .init(batch: 7, interval: .milliseconds(5)))
        subjects.start()
        return StoreSet(
            ledger: SQLiteLedger(writer: writer), credentials: try SQLiteCredentialDirectory(path: path),
            registration: CallerRegistry(try Database.open(path: path, create: false)),
            administration: administration, authorizations: try SQLiteAuthorizationStore(path: path, writer: writer),
            reporting: administration, velocity: administration, history: subjects,
            retention: SQLiteRetention(writer: writer, index: subjects),
            erasure: SQLiteSubjectErasure(writer: writer, index: subjects), decisions: administration,
            performance: administration, training: SQLiteTrainingVectors(try Database.open(path: path, create: false)),
            receiptLog: try SQLiteReceiptLog(path: path), receipts: receipts,
            close: {
                writer.stop()
                subjects.stop()
                try? FileManager.default.removeItem(at: directory)
            })
    }

    /// Every case of every area, each on a fresh store; a failure names its area and case.
    func testTheContract() {
        for failure in StoreContract.runAll(make: makeStores) { XCTFail(failure) }
    }
}

/// The contract against the in-memory fakes: passing it is what lets use-case tests trust them.
final class InMemoryStoreContractTests: XCTestCase {
    func makeStores() throws -> StoreSet {
        let store = InMemoryStore()
        return StoreSet(ledger: store, credentials: store, registration: store, administration: store,
                        authorizations: store, reporting: store, velocity: store, history: store, retention: store,
                        erasure: store, decisions: store, performance: store, training: store, receiptLog: store,
                        receipts: store.receipts)
    }

    /// Every case of every area, each on a fresh store; a failure names its area and case.
    func testTheContract() {
        for failure in StoreContract.runAll(make: makeStores) { XCTFail(failure) }
    }
}

/// Every area has cases (the classes above run them all).
final class StoreContractCoverageTests: XCTestCase {
    func testEveryAreaHasCases() {
        for area in StoreContract.Area.allCases {
            XCTAssertFalse(StoreContract.cases.filter { $0.area == area }.isEmpty, area.rawValue)
        }
    }
}
