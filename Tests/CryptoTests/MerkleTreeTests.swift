import Crypto
import XCTest

/// The Merkle tree of RFC 9162 §2.1: roots and audit paths against Certificate Transparency's
/// reference vectors, small trees worked by hand, and verification refusing every altered input.
final class MerkleTreeTests: XCTestCase {
    /// The eight leaves of the reference vectors of RFC 6962's implementations (Certificate
    /// Transparency's `merkle_tree_test`), reused by RFC 9162's.
    let leaves: [[UInt8]] = [
        [], [0x00], [0x10], [0x20, 0x21], [0x30, 0x31], [0x40, 0x41, 0x42, 0x43],
        Array(0x50...0x57), Array(0x60...0x6f)
    ]

    /// The roots of the first n leaves, n = 1…8.
    let roots = [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
    ]

    func tree(_ n: Int) throws -> MerkleTree {
        try XCTUnwrap(MerkleTree(leafHashes: leaves.prefix(n).map(MerkleTree.leafHash(of:))))
    }

    func testRootsMatchTheReferenceVectors() throws {
        for n in 1...8 {
            XCTAssertEqual(Hex.encode(try tree(n).root), roots[n - 1], "\(n) leaves")
        }
    }

    func testAuditPathsMatchTheReferenceVectors() throws {
        let eight = try tree(8)
        XCTAssertEqual(
            eight.auditPath(for: 0).map(Hex.encode),
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"
            ])
        XCTAssertEqual(
            eight.auditPath(for: 5).map(Hex.encode),
            [
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
            ])
    }

    /// Trees of 1, 2, 3, 5 and 7 leaves written out from the definition (RFC 9162 §2.1.1:
    /// split at the largest power of two below n), with each leaf's path.
    func testSmallTreesWorkedByHand() throws {
        let h = leaves.map(MerkleTree.leafHash(of:))
        func node(_ l: [UInt8], _ r: [UInt8]) -> [UInt8] { MerkleTree.nodeHash(l, r) }
        let h01 = node(h[0], h[1]), h23 = node(h[2], h[3]), h45 = node(h[4], h[5]), h0123 = node(h01, h23)

        XCTAssertEqual(try tree(1).root, h[0])
        XCTAssertEqual(try tree(1).auditPath(for: 0), [])
        XCTAssertEqual(try tree(2).root, h01)
        XCTAssertEqual(try tree(2).auditPath(for: 1), [h[0]])
        XCTAssertEqual(try tree(3).root, node(h01, h[2]))
        XCTAssertEqual(try tree(3).auditPath(for: 2), [h01])
        XCTAssertEqual(try tree(3).auditPath(for: 0), [h[1], h[2]])
        XCTAssertEqual(try tree(5).root, node(h0123, h[4]))
        XCTAssertEqual(try tree(5).auditPath(for: 4), [h0123])
        XCTAssertEqual(try tree(5).auditPath(for: 3), [h[2], h01, h[4]])
        let right7 = node(h45, h[6])
        XCTAssertEqual(try tree(7).root, node(h0123, right7))
        XCTAssertEqual(try tree(7).auditPath(for: 6), [h45, h0123])
        XCTAssertEqual(try tree(7).auditPath(for: 4), [h[5], h[6], h0123])
        XCTAssertEqual(try tree(7).auditPath(for: 1), [h[0], h23, right7])
    }

    /// Every leaf of every tree up to 33 leaves verifies with its path; a wrong index, size, leaf
    /// or path does not.
    func testEveryPathVerifiesAndNothingAlteredDoes() throws {
        for n in 1...33 {
            let hashes = (0..<n).map { MerkleTree.leafHash(of: [UInt8(truncatingIfNeeded: $0), 7]) }
            let tree = try XCTUnwrap(MerkleTree(leafHashes: hashes))
            for i in 0..<n {
                let path = tree.auditPath(for: i)
                XCTAssertEqual(MerkleTree.root(fromAuditPath: path, leafHash: hashes[i], index: i, size: n), tree.root, "\(i) of \(n)")
                if n > 1 {
                    XCTAssertNotEqual(
                        MerkleTree.root(fromAuditPath: path, leafHash: hashes[(i + 1) % n], index: i, size: n),
                        tree.root, "another leaf")
                    XCTAssertNotEqual(
                        MerkleTree.root(fromAuditPath: path, leafHash: hashes[i], index: (i + 1) % n, size: n),
                        tree.root, "another index")
                    if path.count > 1 {
                        XCTAssertNotEqual(
                            MerkleTree.root(fromAuditPath: Array(path.reversed()), leafHash: hashes[i], index: i, size: n),
                            tree.root, "a path in another order")
                    }
                }
                XCTAssertNotEqual(
                    MerkleTree.root(fromAuditPath: path + [tree.root], leafHash: hashes[i], index: i, size: n),
                    tree.root, "a path too long")
                XCTAssertNil(MerkleTree.root(fromAuditPath: path, leafHash: hashes[i], index: n, size: n), "index outside")
            }
        }
        XCTAssertNil(MerkleTree(leafHashes: []))
        XCTAssertNil(MerkleTree(leafHashes: [[1, 2, 3]]))
    }

    func testBase64RoundTripsAndRefusesNonCanonicalText() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes, "length \(length)")
        }
        XCTAssertEqual(Base64.encode([0xFB, 0xFF]), "+/8=")
        XCTAssertEqual(Base64.encode(Array("hello".utf8)), "aGVsbG8=")
        XCTAssertNil(Base64.decode("+/8"), "padding missing")
        XCTAssertNil(Base64.decode("-_8="), "the base64url alphabet")
        XCTAssertNil(Base64.decode("AA=A"), "padding inside")
        XCTAssertNil(Base64.decode("AAAA===="), "padding past the last group")
        XCTAssertNil(Base64.decode("AB=="), "unused bits set")
    }
}
