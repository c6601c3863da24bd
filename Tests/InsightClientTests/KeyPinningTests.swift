import Crypto
import DaemonTesting
import Foundation
import InsightClient
import XCTest
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Pinned signing keys (issue 45): a proxy that serves a key set of its own and re-signs the
/// answer it downgraded — what clients/conformance/tamper_proxy.py `--rekey` does — passes an
/// evaluator that trusts its base URL's JWKS, and fails one that pins the live daemon's keys,
/// by thumbprint or by key. A pinned evaluator still verifies the daemon's own answers, and
/// follows a rotation to a key pinned ahead.
final class KeyPinningTests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.live)
        key = try daemon.createKey(roles: ["evaluate"])
        Replay.reset()
    }

    override func tearDown() {
        daemon = nil
        Replay.reset()
    }

    func testARekeyingProxyPassesWithoutPinsAndFailsWithThem() async throws {
        let forged = try await rekeyedAnswer()
        Replay.set(jwks: forged.jwks)
        Replay.set(answer: forged.body, headers: ["Insight-Receipt": forged.receipt])

        // Without pins, the proxy's key set is trusted: the downgrade verifies.
        let unpinned = try await replayEvaluator(pins: nil).requestEvaluation(context: Self.context)
        XCTAssertEqual(unpinned.receipt?.keyID, forged.kid)
        XCTAssertEqual(unpinned.isLikelyBeingCoached?.outcome, .success(.unknown))
        XCTAssertEqual(unpinned.decision?.action, .proceed)

        let realJWKS = try await jwks()
        let real = try JSONWebKeySet(jwks: realJWKS)
        let pinned = real.keyIDs.joined(separator: ", ")
        for pins in [SigningKeyPins(thumbprints: real.keyIDs), SigningKeyPins(keys: real)] {
            Replay.reset()
            Replay.set(jwks: forged.jwks)
            Replay.set(answer: forged.body, headers: ["Insight-Receipt": forged.receipt])
            let evaluator = replayEvaluator(pins: pins)
            let error = await evaluationError { () async throws(EvaluationError) in
                try await evaluator.requestEvaluation(context: Self.context)
            }
            XCTAssertEqual(error, .receiptInvalid(detail: "key \(forged.kid) is not pinned (pinned: \(pinned))"))
            XCTAssertEqual(Replay.requests(to: "/v1/signing-keys").count, 0, "an unpinned kid is refused without a fetch")
        }
    }

    /// The proxy's key served under the daemon's kid: not that kid's thumbprint, so the key set
    /// is refused rather than the pin fooled.
    func testAKeyPosingAsAPinnedOneIsRefused() async throws {
        let forged = try await rekeyedAnswer(posingAs: try JSONWebKeySet(jwks: try await jwks()).keyIDs[0])
        Replay.set(jwks: forged.jwks)
        Replay.set(answer: forged.body, headers: ["Insight-Receipt": forged.receipt])
        let evaluator = replayEvaluator(pins: SigningKeyPins(thumbprints: [forged.kid]))
        let error = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: Self.context)
        }
        guard case .unexpectedResponse(let detail)? = error else { return XCTFail(String(describing: error)) }
        XCTAssertTrue(detail.contains("is not the RFC 7638 thumbprint of its key"), detail)
    }

    func testPinnedEvaluatorsVerifyTheDaemonAndFollowARotationToAPinnedKey() async throws {
        let current = try JSONWebKeySet(jwks: try await jwks())
        let byKey = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never, signingKeyPins: SigningKeyPins(keys: current))
        let high = try await byKey.requestEvaluation(
            context: InsightContext(operationCategory: .payment), options: .insightOverride("isLikelyBeingCoached=high"))
        XCTAssertEqual(high.isLikelyBeingCoached?.outcome, .success(.high))
        XCTAssertEqual(high.decision?.action, .confirmOutOfBand)

        let onlyCurrent = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never,
            signingKeyPins: SigningKeyPins(thumbprints: current.keyIDs))
        _ = try await onlyCurrent.requestEvaluation(context: InsightContext(operationCategory: .payment))
        // The next key is known before it signs (docs/operations.md, "Signing keys"): pinned
        // beside the current one, it verifies once it does; an evaluator without it refuses.
        let next = try daemon.rotateSigningKey()
        let withNext = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never,
            signingKeyPins: SigningKeyPins(thumbprints: current.keyIDs + [next]))
        let rotated = try await withNext.requestEvaluation(context: InsightContext(operationCategory: .payment))
        XCTAssertEqual(rotated.receipt?.keyID, next)
        let error = await evaluationError { () async throws(EvaluationError) in
            try await onlyCurrent.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        XCTAssertEqual(error, .receiptInvalid(detail: "key \(next) is not pinned (pinned: \(current.keyIDs.joined(separator: ", ")))"))
        // Allowing unpinned keys (while rolling pins out) accepts it.
        let lenient = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never,
            signingKeyPins: SigningKeyPins(thumbprints: current.keyIDs, allowUnpinnedKeys: true))
        let accepted = try await lenient.requestEvaluation(context: InsightContext(operationCategory: .payment))
        XCTAssertEqual(accepted.receipt?.keyID, next)
        // Pins that pin nothing trust nothing.
        let empty = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never, signingKeyPins: SigningKeyPins(thumbprints: []))
        let refused = await evaluationError { () async throws(EvaluationError) in
            try await empty.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        XCTAssertEqual(refused, .receiptInvalid(detail: "key \(next) is not pinned (pinned: none)"))
    }

    // MARK: - Support

    static let requestID = "req-rekeyed"
    static let context = InsightContext(operationCategory: .payment, requestID: requestID)

    func jwks() async throws -> Data {
        try await URLSession.shared.data(from: daemon.baseURL.appendingPathComponent("v1/signing-keys")).0
    }

    /// The daemon's `high` answer as the re-keying proxy hands it on: downgraded, and signed (a
    /// tree of one leaf, the daemon's head payload with the proxy's instance, sequence, size,
    /// root and previous) with a key of the proxy's own, which its JWKS lists — under its own
    /// thumbprint, or under `kid`.
    func rekeyedAnswer(posingAs kid: String? = nil) async throws -> (body: Data, receipt: String, jwks: Data, kid: String) {
        var request = URLRequest(url: daemon.baseURL.appendingPathComponent("v1/evaluations"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("isLikelyBeingCoached=high", forHTTPHeaderField: "Insight-Override")
        request.httpBody = Data(
            #"{"requestId":"\#(Self.requestID)","operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#
                .utf8)
        let (answer, response) = try await URLSession.shared.data(for: request)
        let http = try XCTUnwrap(response as? HTTPURLResponse)
        XCTAssertEqual(http.statusCode, 200)
        let text = String(decoding: answer, as: UTF8.self)
        XCTAssertTrue(text.contains(#""high""#) && text.contains(#""confirmOutOfBand""#), text)
        let body = Data(
            text.replacingOccurrences(of: #""high""#, with: #""unknown""#)
                .replacingOccurrences(of: #""confirmOutOfBand""#, with: #""proceed""#).utf8)

        let realHead = try XCTUnwrap(http.value(forHTTPHeaderField: "Insight-Receipt")?.split(separator: "\"")[1])
        let realPayload = try XCTUnwrap(Base64URL.decode(String(realHead.split(separator: ".")[1])))
        var payload = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(realPayload)) as? [String: Any])
        payload["instance"] = "rekeying-proxy"
        payload["sequence"] = 0
        payload["size"] = 1
        payload["root"] = Base64URL.encode(MerkleTree.leafHash(of: Array(body)))
        payload["previous"] = NSNull()

        let (signingKey, _) = Ed25519SigningKey.generate()
        let x = Base64URL.encode(signingKey.publicKey)
        let ownKid = kid ?? Ed25519JWK.thumbprint(publicKey: signingKey.publicKey)
        let head = try XCTUnwrap(
            JWSSigner(key: signingKey, keyId: ownKid).compactSerialization(
                of: Array(try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))))
        let jwks = #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"\#(x)","kid":"\#(ownKid)","use":"sig","alg":"EdDSA"}]}"#
        return (body, #"head="\#(head)", index=0, path=()"#, Data(jwks.utf8), ownKid)
    }

    /// An evaluator whose requests `Replay` answers, the proxy's way.
    func replayEvaluator(pins: SigningKeyPins?) -> InsightEvaluator {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [Replay.self]
        return InsightEvaluator(
            baseURL: URL(string: "http://rekeying.invalid")!, apiKey: key,
            session: URLSession(configuration: configuration), retryPolicy: .never, signingKeyPins: pins)
    }
}
