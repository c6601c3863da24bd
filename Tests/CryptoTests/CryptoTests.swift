import Crypto
import Foundation
import XCTest

final class CryptoTests: XCTestCase {
    /// RFC 4231 §4 test cases 1–4, 6, 7 (case 5 tests truncated output, which we never use).
    func testHMACSHA256MatchesRFC4231Vectors() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/rfc4231.json")
        let vectors = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [[String: String]])
        XCTAssertEqual(vectors.count, 6)
        for vector in vectors {
            let key = try XCTUnwrap(Hex.decode(vector["key"]!))
            let data = try XCTUnwrap(Hex.decode(vector["data"]!))
            let tag = HMACSHA256.authenticationCode(for: data, key: key)
            XCTAssertEqual(Hex.encode(tag), vector["hmacSHA256"], "RFC 4231 case \(vector["case"]!)")
        }
    }

    func testSHA256KnownAnswers() {
        XCTAssertEqual(
            SHA256.hexDigest([]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(
            SHA256.hexDigest(Array("abc".utf8)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // In parts: the digest of the parts joined.
        let a = Array("ab".utf8), c = Array("c".utf8), none: [UInt8] = []
        let parts = a.withUnsafeBytes { a in c.withUnsafeBytes { c in none.withUnsafeBytes { SHA256.digest(a, $0, c) } } }
        XCTAssertEqual(Hex.encode(parts), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testHMACWithEmptyMessageAndKey() {
        // Known answer computed by Python's hmac module for an empty key and message.
        XCTAssertEqual(
            Hex.encode(HMACSHA256.authenticationCode(for: [], key: [])),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    func testConstantTimeEquals() {
        XCTAssertTrue(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(ConstantTime.equals([1, 2, 3], [1, 2]))
        XCTAssertTrue(ConstantTime.equals([], []))
    }

    func testRandomBytesAndUUIDs() {
        let a = SecureRandom.bytes(32), b = SecureRandom.bytes(32)
        XCTAssertEqual(a.count, 32)
        XCTAssertNotEqual(a, b)
        let uuid = SecureRandom.uuid()
        XCTAssertEqual(uuid.count, 36)
        XCTAssertNotNil(
            uuid.range(
                of: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
                options: .regularExpression))
    }

    func testVersion7UUIDsAreTimeOrdered() {
        let a = SecureRandom.uuidV7(milliseconds: 1_796_205_600_123)
        XCTAssertNotNil(
            a.range(
                of: "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
                options: .regularExpression), a)
        // 1_796_205_600_123 ms = 0x01A2 322B 3C7B: the first 48 bits.
        XCTAssertTrue(a.hasPrefix(String(1_796_205_600_123, radix: 16).leftPadded(12).prefix(8)), a)
        let ids = (0..<100).map { SecureRandom.uuidV7(milliseconds: 1_796_205_600_000 + Int64($0)) }
        XCTAssertEqual(ids, ids.sorted())
        XCTAssertNotEqual(SecureRandom.uuidV7(milliseconds: 5), SecureRandom.uuidV7(milliseconds: 5))
        // Several from one draw: same millisecond prefix, valid, all different.
        let batch = SecureRandom.uuidV7(count: 4, milliseconds: 1_796_205_600_123)
        XCTAssertEqual(batch.count, 4)
        XCTAssertEqual(Set(batch).count, 4)
        for id in batch {
            XCTAssertEqual(id.prefix(13), a.prefix(13), id)
            XCTAssertNotNil(
                id.range(
                    of: "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
                    options: .regularExpression), id)
        }
    }

    /// Identifier bytes come from a 4 KiB buffer: draws across several refills are all
    /// different, of the asked length, and never the zeros the buffer starts as.
    func testIdentifierBytesAcrossRefills() {
        let draws = (0..<1_000).map { _ in SecureRandom.identifierBytes(16) }
        XCTAssertTrue(draws.allSatisfy { $0.count == 16 })
        XCTAssertEqual(Set(draws).count, draws.count)
        XCTAssertFalse(draws.contains([UInt8](repeating: 0, count: 16)))
        XCTAssertEqual(SecureRandom.identifierBytes(0), [])
        XCTAssertEqual(SecureRandom.identifierBytes(256).count, 256)
    }

    func testHexAndBase64URL() {
        XCTAssertEqual(Hex.encode([0x00, 0xAB, 0xFF]), "00abff")
        XCTAssertEqual(Hex.decode("00ABff"), [0x00, 0xAB, 0xFF])
        XCTAssertNil(Hex.decode("abc"))
        XCTAssertNil(Hex.decode("zz"))
        // RFC 4648 §10 vectors, translated to the URL alphabet without padding.
        XCTAssertEqual(Base64URL.encode(Array("f".utf8)), "Zg")
        XCTAssertEqual(Base64URL.encode(Array("fo".utf8)), "Zm8")
        XCTAssertEqual(Base64URL.encode(Array("foobar".utf8)), "Zm9vYmFy")
        XCTAssertEqual(Base64URL.encode([0xFB, 0xFF]), "-_8")
    }

    /// Every length's remainder, appended after existing bytes (as a JWS signing input is),
    /// matches Foundation-free reference encoding and decodes back to the same bytes.
    func testBase64URLAppendKeepsThePrefixAndRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var out = Array("prefix.".utf8)
            bytes.withUnsafeBytes { Base64URL.append($0, to: &out) }
            XCTAssertEqual(Array(out.prefix(7)), Array("prefix.".utf8))
            let encoded = String(decoding: out.dropFirst(7), as: UTF8.self)
            XCTAssertEqual(encoded.utf8.count, Base64URL.encodedCount(length))
            XCTAssertEqual(encoded, Self.referenceBase64URL(bytes), "length \(length)")
            XCTAssertEqual(Base64URL.decode(encoded), bytes, "length \(length)")
        }
    }

    /// Base64url by the bit-at-a-time definition of RFC 4648, independent of the encoder's loop.
    static func referenceBase64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var bits = bytes.flatMap { byte in (0..<8).reversed().map { (byte >> $0) & 1 } }
        while bits.count % 6 != 0 { bits.append(0) }
        return String(
            stride(from: 0, to: bits.count, by: 6).map { start in
                alphabet[bits[start..<start + 6].reduce(0) { Int($0) << 1 | Int($1) }]
            })
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
