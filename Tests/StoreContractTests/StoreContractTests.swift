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
        var settings = SQLiteSettings(path: path)
        // The indexer runs as in the daemon: each case reads some evaluations from the side
        // file and others from the tail, as the indexer's pace and the machine's load make it.
        settings.subjectIndexPace = .init(batch: 7, interval: .milliseconds(5))
        let receipts = ReceiptIssuer.withEphemeralKey(instance: "sqlite-contract")
        let (store, _) = try SQLiteStore.open(settings: settings, now: 1, receipts: receipts)
        store.start()
        let administration = store.administration
        return StoreSet(
            ledger: store.ledger, credentials: store.credentials, registration: try SQLiteStore.registration(path: path, now: 1),
            administration: administration, authorizations: store.authorizations,
            reporting: administration, velocity: administration, history: store.subjects,
            retention: store.retention, erasure: store.erasure, decisions: administration,
            performance: administration, training: try SQLiteStore.trainingVectors(path: path, now: 1),
            receiptLog: store.receiptLog, interventions: store.interventions, receipts: receipts,
            close: {
                store.stop()
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
        return StoreSet(
            ledger: store, credentials: store, registration: store, administration: store,
            authorizations: store, reporting: store, velocity: store, history: store, retention: store,
            erasure: store, decisions: store, performance: store, training: store, receiptLog: store, interventions: store,
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
