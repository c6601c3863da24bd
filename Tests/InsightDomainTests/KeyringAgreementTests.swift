import InsightDomain
import XCTest

final class KeyringAgreementTests: XCTestCase {
    let old = [UInt8](repeating: 1, count: 32), new = [UInt8](repeating: 2, count: 32), other = [UInt8](repeating: 3, count: 32)

    func ids(_ keys: [UInt8]...) throws -> [String] { try HashKeyring(keys: keys).all.map(\.keyId) }

    func testAnEmptyStoreTakesTheKeyringsKeys() throws {
        let keyring = try HashKeyring(keys: [new, old])
        XCTAssertEqual(try KeyringAgreement.keysToRegister(keyring, registered: []), try ids(new, old))
    }

    func testTheSameKeyringOrARotationOfItIsAccepted() throws {
        let registered = Set(try ids(old))
        XCTAssertEqual(try KeyringAgreement.keysToRegister(try HashKeyring(keys: [old]), registered: registered), [])
        // A rotation keeps the old key as a previous one: the new active key is registered.
        XCTAssertEqual(try KeyringAgreement.keysToRegister(try HashKeyring(keys: [new, old]), registered: registered), try ids(new))
        // An instance not yet given the rotated file still shares the old key.
        XCTAssertEqual(try KeyringAgreement.keysToRegister(try HashKeyring(keys: [old]), registered: Set(try ids(new, old))), [])
    }

    func testAKeyringSharingNoKeyIsRefused() throws {
        let registered = Set(try ids(old, new))
        XCTAssertThrowsError(try KeyringAgreement.keysToRegister(try HashKeyring(keys: [other]), registered: registered)) { error in
            let mismatch = error as? KeyringMismatch
            XCTAssertEqual(mismatch?.keyring, try? self.ids(self.other))
            XCTAssertEqual(mismatch?.registered, registered.sorted())
            XCTAssertTrue("\(error)".contains("every instance must read the same hash key file"))
        }
    }
}
