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
        let (store, _) = try PostgresStore.open(settings: settings, now: 1)
        store.start()
        return StoreSet(
            ledger: store.ledger, credentials: store.credentials,
            registration: try PostgresStore.registration(settings: settings, now: 1),
            administration: store.administration, authorizations: store.authorizations,
            reporting: store.administration, velocity: store.administration, history: store.administration,
            retention: store.retention, erasure: store.erasure, decisions: store.administration,
            performance: store.administration, training: try PostgresStore.trainingVectors(settings: settings, now: 1),
            close: { store.stop() })
    }

    func check(_ area: StoreContract.Area, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertGreaterThan(StoreContract.cases.filter { $0.area == area }.count, 0, file: file, line: line)
        for failure in StoreContract.run(area, make: Self.makeStores) { XCTFail(failure, file: file, line: line) }
    }

    func testConsumption() { check(.consumption) }
    func testLabels() { check(.labels) }
    func testCredentials() { check(.credentials) }
    func testRegistration() { check(.registration) }
    func testAdministration() { check(.administration) }
    func testAuthorization() { check(.authorization) }
    func testReporting() { check(.reporting) }
    func testVelocity() { check(.velocity) }
    func testHistory() { check(.history) }
    func testRetention() { check(.retention) }
    func testErasure() { check(.erasure) }
    func testDecisions() { check(.decisions) }
    func testPerformance() { check(.performance) }
    func testTraining() { check(.training) }

    /// Every area of the contract has a test above.
    func testEveryAreaIsRun() {
        XCTAssertEqual(StoreContract.Area.allCases.count, 14, "add a test for the new area above")
    }
}
