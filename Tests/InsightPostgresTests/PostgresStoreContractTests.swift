import Foundation
import InsightDomain
import InsightPostgres
import PostgresTesting
import StoreContract
import XCTest

/// The store contract against the PostgreSQL store, as StoreContractTests runs it against
/// SQLite and the fakes: each case on a fresh database of the shared temporary server.
final class PostgresStoreContractTests: XCTestCase {
    static func makeStores() throws -> StoreSet {
        let server = try TemporaryPostgres.shared()
        let settings = PostgresSettings(url: server.url(database: try server.createDatabase()))
        let receipts = ReceiptIssuer.withEphemeralKey(instance: "postgres-contract")
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: receipts)
        store.start()
        return StoreSet(
            ledger: store.ledger, credentials: store.credentials,
            registration: try PostgresStore.registration(settings: settings, now: 1),
            administration: store.administration, authorizations: store.authorizations,
            reporting: store.administration, velocity: store.administration, history: store.administration,
            retention: store.retention, erasure: store.erasure, decisions: store.administration,
            performance: store.administration, training: try PostgresStore.trainingVectors(settings: settings, now: 1),
            receiptLog: store.receiptLog, interventions: store.interventions, receipts: receipts, close: { store.stop() })
    }

    /// Every case of every area, each on a fresh database; a failure names its area and case.
    func testTheContract() {
        for failure in StoreContract.runAll(make: Self.makeStores) { XCTFail(failure) }
    }
}
