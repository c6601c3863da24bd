import Crypto
import InsightDomain
import XCTest

/// Each tenant hashes under keys derived from the keyring (docs/privacy.md).
final class TenantKeyTests: XCTestCase {
    let old = [UInt8](repeating: 1, count: 32), new = [UInt8](repeating: 2, count: 32)

    func testTheDefaultTenantKeepsTheKeyringsOwnHashes() throws {
        let keyring = try HashKeyring(keys: [old, new])
        let own = keyring.forTenant(Tenant.defaultName)
        XCTAssertEqual(own.active.keyId, keyring.active.keyId)
        XCTAssertEqual(own.lookupHashes("acct-1", kind: .account), keyring.lookupHashes("acct-1", kind: .account))
    }

    func testOtherTenantsHashApartAndFollowRotations() throws {
        let before = try HashKeyring(keys: [old]), after = try HashKeyring(keys: [old, new])
        let acme = before.forTenant("acme"), globex = before.forTenant("globex")
        let hashes = [before, acme, globex].map { $0.active.hash("acct-1", kind: .account) }
        XCTAssertEqual(Set(hashes).count, 3)
        XCTAssertEqual(Set([before, acme, globex].map(\.active.keyId)).count, 3)
        // Deterministic, and the derivation the product documents.
        XCTAssertEqual(before.forTenant("acme").active.hash("acct-1", kind: .account), hashes[1])
        let derived = HMACSHA256.authenticationCode(for: Array("insightd tenant key\u{0}acme".utf8), key: old)
        XCTAssertEqual(try SubjectHasher(key: derived).hash("acct-1", kind: .account), hashes[1])
        // After a rotation a tenant's lookups still find what it stored under its previous key.
        let rotated = after.forTenant("acme")
        XCTAssertEqual(rotated.previous.first?.hash("acct-1", kind: .account), hashes[1])
        XCTAssertNotEqual(rotated.active.hash("acct-1", kind: .account), hashes[1])
    }

    func testHashKeysKeepEachTenantsKeyringUntilReplaced() throws {
        let keys = HashKeys(try HashKeyring(keys: [old]))
        let first = keys.current(tenant: "acme").active.keyId
        XCTAssertEqual(keys.current(tenant: "acme").active.keyId, first)
        keys.replace(try HashKeyring(keys: [old, new]))
        XCTAssertNotEqual(keys.current(tenant: "acme").active.keyId, first, "a rotation did not reach a tenant's keyring")
        XCTAssertEqual(keys.current(tenant: "acme").previous.first?.keyId, first)
    }
}
