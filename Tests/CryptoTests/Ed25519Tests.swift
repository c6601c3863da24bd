import Crypto
import XCTest

/// Ed25519 through OpenSSL against RFC 8032's and RFC 8037's known answers, and the detached
/// JWS built on it.
final class Ed25519Tests: XCTestCase {
    /// RFC 8032 §7.1, tests 1 and 2: public key and signature from the seed.
    func testRFC8032Vectors() throws {
        let vectors: [(seed: String, publicKey: String, message: String, signature: String)] = [
            (
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
            ),
            (
                "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
                "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
            )
        ]
        for vector in vectors {
            let key = try XCTUnwrap(Ed25519SigningKey(seed: XCTUnwrap(Hex.decode(vector.seed))))
            XCTAssertEqual(Hex.encode(key.publicKey), vector.publicKey)
            let message = try XCTUnwrap(Hex.decode(vector.message))
            let signature = try XCTUnwrap(key.signature(for: message))
            XCTAssertEqual(Hex.encode(signature), vector.signature)
            let verifier = try XCTUnwrap(Ed25519VerifyingKey(rawRepresentation: key.publicKey))
            XCTAssertTrue(verifier.isValidSignature(signature, for: message))
        }
    }

    func testVerificationFailsForAnyChange() throws {
        let (key, seed) = Ed25519SigningKey.generate()
        XCTAssertEqual(seed.count, 32)
        XCTAssertEqual(Ed25519SigningKey(seed: seed)?.publicKey, key.publicKey, "the seed makes the same key again")
        let message = Array("an answer".utf8)
        let signature = try XCTUnwrap(key.signature(for: message))
        let verifier = try XCTUnwrap(Ed25519VerifyingKey(rawRepresentation: key.publicKey))
        XCTAssertTrue(verifier.isValidSignature(signature, for: message))
        XCTAssertFalse(verifier.isValidSignature(signature, for: Array("an answeR".utf8)))
        var flipped = signature
        flipped[10] ^= 1
        XCTAssertFalse(verifier.isValidSignature(flipped, for: message))
        XCTAssertFalse(verifier.isValidSignature(Array(signature.dropLast()), for: message))
        let other = try XCTUnwrap(Ed25519VerifyingKey(rawRepresentation: Ed25519SigningKey.generate().key.publicKey))
        XCTAssertFalse(other.isValidSignature(signature, for: message))
    }

    func testKeysOfTheWrongLengthAreRefused() {
        XCTAssertNil(Ed25519SigningKey(seed: Array(repeating: 1, count: 31)))
        XCTAssertNil(Ed25519SigningKey(seed: Array(repeating: 1, count: 33)))
        XCTAssertNil(Ed25519VerifyingKey(rawRepresentation: Array(repeating: 1, count: 31)))
        XCTAssertNil(Ed25519VerifyingKey(rawRepresentation: []))
    }

    /// RFC 8037 appendix A.3: the JWK thumbprint of the appendix A.1 key.
    func testJWKThumbprintMatchesRFC8037() throws {
        let x = try XCTUnwrap(Base64URL.decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"))
        XCTAssertEqual(Ed25519JWK.thumbprint(publicKey: x), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
    }

    /// The compact serialization: `BASE64URL(header).BASE64URL(payload).BASE64URL(signature)`,
    /// signing `BASE64URL(header).BASE64URL(payload)`.
    func testCompactJWSSignsTheSigningInput() throws {
        let seed = try XCTUnwrap(Hex.decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        let key = try XCTUnwrap(Ed25519SigningKey(seed: seed))
        let signer = JWSSigner(key: key, keyId: "k1")
        let payload = Array(#"{"sequence":0}"#.utf8)
        let jws = try XCTUnwrap(signer.compactSerialization(of: payload))
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(Base64URL.decode(parts[0]).map { String(decoding: $0, as: UTF8.self) }, #"{"alg":"EdDSA","kid":"k1"}"#)
        XCTAssertEqual(Base64URL.decode(parts[1]), payload)
        let input = Array((String(parts[0]) + "." + String(parts[1])).utf8)
        let verifier = try XCTUnwrap(Ed25519VerifyingKey(rawRepresentation: key.publicKey))
        XCTAssertTrue(verifier.isValidSignature(try XCTUnwrap(Base64URL.decode(parts[2])), for: input))
        // Ed25519 is deterministic: the same payload, the same serialization.
        XCTAssertEqual(signer.compactSerialization(of: payload), jws)
    }

    func testBase64URLRoundTripsAndRefusesNonCanonicalText() throws {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(bytes)), bytes, "length \(length)")
        }
        XCTAssertEqual(Base64URL.encode([0xFB, 0xFF]), "-_8")
        XCTAssertEqual(Base64URL.decode("-_8"), [0xFB, 0xFF])
        XCTAssertNil(Base64URL.decode("a"), "a length no encoding has")
        XCTAssertNil(Base64URL.decode("AA=="), "padding")
        XCTAssertNil(Base64URL.decode("A+/A"), "the standard alphabet")
        XCTAssertNil(Base64URL.decode("AB"), "unused bits set: not the encoding of any bytes")
        XCTAssertEqual(Base64URL.decode("AA"), [0])
    }
}
