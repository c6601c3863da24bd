import Crypto
import InsightDomain
import InsightTesting
import XCTest

/// The receipt issuer's chain (sequence, previous, time that never goes back) and the audit that
/// walks a stored chain, with each way a chain can break.
final class ReceiptChainTests: XCTestCase {
    let clock = ManualClock(1_800_000_000_000)

    func issuer(_ instance: String = "i-1") -> ReceiptIssuer { .withEphemeralKey(instance: instance, clock: clock) }

    func leaves(_ n: Int, _ seed: UInt8 = 0) -> [[UInt8]] { (0..<n).map { MerkleTree.leafHash(of: [seed, UInt8($0)]) } }

    func logged(_ batch: ReceiptBatch) -> LoggedHead { LoggedHead(signed: batch.head, leaves: batch.leaves) }

    func keys(of issuer: ReceiptIssuer) -> [String: Ed25519VerifyingKey] {
        var keys: [String: Ed25519VerifyingKey] = [:]
        for key in issuer.keys.published() { keys[key.keyId] = Ed25519VerifyingKey(rawRepresentation: key.publicKey) }
        return keys
    }

    func testHeadsChainAndTheirTimeNeverGoesBack() throws {
        let issuer = issuer()
        let first = try XCTUnwrap(issuer.issue(leafHashes: leaves(3)))
        XCTAssertEqual(first.head.head.sequence, 0)
        XCTAssertNil(first.head.head.previous)
        XCTAssertEqual(first.head.head.size, 3)
        XCTAssertEqual(SignedHead(jws: first.head.jws), first.head, "the JWS carries the head")
        // Not committed: the next draft takes the same place.
        XCTAssertEqual(issuer.issue(leafHashes: leaves(1))?.head.head.sequence, 0)
        issuer.committed(first)
        clock.step(ms: -60_000)
        let second = try XCTUnwrap(issuer.issue(leafHashes: leaves(2)))
        XCTAssertEqual(second.head.head.sequence, 1)
        XCTAssertEqual(second.head.head.previous, first.head.hash)
        XCTAssertEqual(second.head.head.time, first.head.head.time, "a clock stepped back makes no older head")
        let receipt = second.receipt(at: 1)
        XCTAssertEqual(MerkleTree.root(fromAuditPath: receipt.path, leafHash: leaves(2)[1], index: 1, size: 2), second.head.head.root)
        XCTAssertNil(issuer.issue(leafHashes: []), "no leaf, no head")
    }

    /// A head names its tenant and environment (after `instance`), or neither (a head made
    /// before migration 0024); each chain of an issuer is numbered and chained on its own.
    func testAHeadNamesItsTenantAndEnvironmentAndEachChainGoesOnItsOwn() throws {
        let issuer = issuer()
        let acme = try XCTUnwrap(issuer.issue(leafHashes: leaves(2), tenant: "acme", environment: "production"))
        issuer.committed(acme)
        XCTAssertTrue(
            String(decoding: acme.head.head.payload, as: UTF8.self)
                .hasPrefix(#"{"instance":"i-1","tenant":"acme","environment":"production","sequence":0,"#))
        XCTAssertEqual(ReceiptHead(payload: acme.head.head.payload), acme.head.head)
        XCTAssertEqual(issuer.nextPlace(tenant: "acme", environment: "production").sequence, 1)
        XCTAssertEqual(issuer.nextPlace(tenant: "acme", environment: "sandbox").sequence, 0, "another environment, another chain")
        let globex = try XCTUnwrap(issuer.issue(leafHashes: leaves(1), tenant: "globex", environment: "production"))
        XCTAssertEqual(globex.head.head.sequence, 0)
        XCTAssertNil(globex.head.head.previous, "globex's chain follows none of acme's heads")
        let next = try XCTUnwrap(issuer.issue(leafHashes: leaves(1), tenant: "acme", environment: "production"))
        XCTAssertEqual(next.head.head.previous, acme.head.hash)
        let old = try XCTUnwrap(issuer.issue(leafHashes: leaves(1)))
        XCTAssertFalse(String(decoding: old.head.head.payload, as: UTF8.self).contains("tenant"), "a head of no tenant")
        XCTAssertEqual(ReceiptHead(payload: old.head.head.payload)?.chain, ReceiptChain(instance: "i-1", tenant: nil, environment: nil))
        let root = Base64URL.encode(acme.head.head.root)
        for broken in [
            #"{"instance":"i-1","tenant":"acme","sequence":0,"size":1,"root":"\#(root)","previous":null,"time":1}"#,
            #"{"instance":"i-1","tenant":"","environment":"x","sequence":0,"size":1,"root":"\#(root)","previous":null,"time":1}"#,
            #"{"instance":"i-1","tenant":1,"environment":"x","sequence":0,"size":1,"root":"\#(root)","previous":null,"time":1}"#
        ] {
            XCTAssertNil(ReceiptHead(payload: Array(broken.utf8)), broken)
        }
    }

    func testTheAuditPassesAChainAndStopsAtItsFirstBreak() throws {
        let issuer = issuer()
        var batches: [ReceiptBatch] = []
        for k in 0..<4 {
            let batch = try XCTUnwrap(issuer.issue(leafHashes: leaves(k + 1, UInt8(k))))
            issuer.committed(batch)
            batches.append(batch)
            clock.advance(ms: 10)
        }
        var audit = ReceiptChainAudit(chain: ReceiptChain(instance: "i-1", tenant: nil, environment: nil), keys: keys(of: issuer))
        for batch in batches { XCTAssertTrue(audit.check(logged(batch))) }
        XCTAssertEqual(audit.heads, 4)
        XCTAssertEqual(audit.answers, 10)
        XCTAssertNil(audit.broken)

        func brokenAt(_ heads: [LoggedHead], keys: [String: Ed25519VerifyingKey]? = nil, instance: String = "i-1") -> String? {
            var audit = ReceiptChainAudit(
                chain: ReceiptChain(instance: instance, tenant: nil, environment: nil), keys: keys ?? self.keys(of: issuer))
            for head in heads where audit.check(head) {}
            return audit.broken.map { "\($0.sequence): \($0.reason)" }
        }
        let heads = batches.map(logged)
        XCTAssertEqual(brokenAt([heads[0], heads[2]]), "2: head 1 is missing: the next stored is 2")
        XCTAssertEqual(brokenAt(heads, instance: "i-2"), "0: it names chain i-1")
        XCTAssertTrue(brokenAt(heads, keys: [:])?.hasPrefix("0: it is signed by key ") == true)
        XCTAssertEqual(
            brokenAt([heads[0], LoggedHead(signed: heads[1].signed, leaves: heads[2].leaves)]),
            "1: it stores 3 leaf hashes for a tree of 2")
        XCTAssertEqual(
            brokenAt([heads[0], LoggedHead(signed: heads[1].signed, leaves: Array(heads[1].leaves.reversed()))]),
            "1: its stored leaves do not give its root")
        // Heads the same key signed that do not chain: a forged previous, a time gone back.
        let key = try XCTUnwrap(issuer.keys.published().first?.signer)
        func forged(_ head: ReceiptHead) throws -> LoggedHead {
            LoggedHead(
                signed: SignedHead(head: head, jws: try XCTUnwrap(key.compactSerialization(of: head.payload))), leaves: heads[1].leaves)
        }
        let real = heads[1].signed.head
        XCTAssertEqual(
            brokenAt([
                heads[0],
                try forged(
                    ReceiptHead(
                        instance: "i-1", sequence: 1, size: real.size, root: real.root,
                        previous: Array(repeating: 1, count: 32), time: real.time))
            ]),
            "1: its previous is not the hash of head 0")
        XCTAssertEqual(
            brokenAt([
                heads[0],
                try forged(
                    ReceiptHead(
                        instance: "i-1", sequence: 1, size: real.size, root: real.root,
                        previous: real.previous, time: heads[0].signed.head.time - 1))
            ]),
            "1: its time is earlier than head 0's")
        var tampered = Array(heads[1].signed.jws.utf8)
        tampered[tampered.count - 3] = tampered[tampered.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertTrue(
            brokenAt([
                heads[0],
                LoggedHead(
                    signed: SignedHead(head: real, jws: String(decoding: tampered, as: UTF8.self)),
                    leaves: heads[1].leaves)
            ])?.contains("its signature does not verify") == true)
    }
}
