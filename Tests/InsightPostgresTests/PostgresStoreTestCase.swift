import InsightDomain
import InsightPostgres
import PostgresTesting
import XCTest

/// Tests of the PostgreSQL store on a database of their own (made per test on the shared
/// server), with the stores they opened stopped after each.
class PostgresStoreTestCase: XCTestCase {
    var server: TemporaryPostgres!
    var settings: PostgresSettings!
    var stores: [PostgresStore] = []

    override func setUpWithError() throws {
        server = try TemporaryPostgres.shared()
        settings = PostgresSettings(url: server.url(database: try server.createDatabase()))
    }

    override func tearDown() {
        for store in stores { store.stop() }
        stores = []
    }

    /// A started store on the test's database: one instance, with a chain of receipt heads of
    /// its own unless `receipts` is given.
    func instance(
        _ configure: (inout PostgresSettings) -> Void = { _ in }, receipts: ReceiptIssuer? = nil,
        observer: (@Sendable (PostgresWriter.Commit) -> Void)? = nil
    ) throws -> PostgresStore {
        var settings = self.settings!
        configure(&settings)
        let receipts = receipts ?? .withEphemeralKey(instance: "instance-\(stores.count)")
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: receipts, observer: observer)
        store.start()
        stores.append(store)
        return store
    }
}
