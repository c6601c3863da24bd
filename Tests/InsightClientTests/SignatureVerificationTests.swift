import Foundation
import InsightClient
import Synchronization
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The client verifies every answer's `Insight-Signature` by default: against a real daemon
/// (rotation included), and against real answers and key sets replayed with one thing changed,
/// for each way a signature can fail.
final class SignatureVerificationTests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(models: false)
        key = try daemon.createKey(roles: ["evaluate"])
        Replay.reset()
    }

    override func tearDown() {
        daemon = nil
        Replay.reset()
    }

    func testAnswersAreVerifiedAndTheProofVerifiesLaterAcrossARotation() async throws {
        let evaluator = InsightEvaluator(baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never)
        let first = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        let proof = try XCTUnwrap(first.signature, "verified answers carry their proof")
        XCTAssertTrue(proof.jws.contains(".."), proof.jws)
        XCTAssertEqual(try JSONWebKeySet.keyID(of: proof.jws), proof.keyID)
        XCTAssertTrue(String(decoding: proof.body, as: UTF8.self).contains(first.eventID), "the proof holds the exact body")

        // After a rotation the answer names a key the evaluator has not fetched: it fetches once more.
        let newKey = try daemon.rotateSigningKey()
        let second = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        XCTAssertEqual(second.signature?.keyID, newKey)
        XCTAssertNotEqual(newKey, proof.keyID)

        // Later, anyone with the JWKS checks the stored proof.
        let (jwks, _) = try await URLSession.shared.data(from: daemon.baseURL.appendingPathComponent("v1/signing-keys"))
        let keys = try JSONWebKeySet(jwks: jwks)
        XCTAssertEqual(Set(keys.keyIDs), [proof.keyID, newKey])
        XCTAssertEqual(try keys.verify(body: proof.body, signature: proof.jws), proof)
        var tampered = proof.body
        tampered[tampered.startIndex + 2] ^= 1
        XCTAssertEqual(verificationError { () throws(EvaluationError) in try keys.verify(body: tampered, signature: proof.jws) },
                       .signatureInvalid(detail: "the signature does not match the body (key \(proof.keyID))"))
    }

    func testVerificationCanBeTurnedOff() async throws {
        let answer = try await realAnswer()
        Replay.set(answer: answer.body, headers: [:])  // no signature at all
        let evaluator = replayEvaluator(.disabled)
        let evaluation = try await evaluator.requestEvaluation(context: Self.context)
        XCTAssertNil(evaluation.signature)
        XCTAssertEqual(Replay.requests(to: "/v1/signing-keys").count, 0, "no key set fetched")
    }

    func testAMissingSignatureFails() async throws {
        Replay.set(answer: try await realAnswer().body, headers: [:])
        let error = await evaluationError { () async throws(EvaluationError) in
            try await replayEvaluator().requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .signatureInvalid(detail: "the answer carries no Insight-Signature"))
        XCTAssertEqual(Replay.requests(to: "/v1/evaluations").count, 1, "a signature failure is not retried")
    }

    func testATamperedBodyFails() async throws {
        let answer = try await realAnswer()
        Replay.set(jwks: try await realJWKS())
        var body = answer.body
        let text = String(decoding: body, as: UTF8.self)
        body = Data(text.replacingOccurrences(of: #""environment":"sandbox""#, with: #""environment":"sandbax""#).utf8)
        XCTAssertNotEqual(body, answer.body)
        Replay.set(answer: body, headers: ["Insight-Signature": answer.signature])
        let error = await evaluationError { () async throws(EvaluationError) in
            try await replayEvaluator().requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .signatureInvalid(detail: "the signature does not match the body (key \(try JSONWebKeySet.keyID(of: answer.signature)))"))
    }

    func testMalformedSignaturesFail() async throws {
        let answer = try await realAnswer()
        Replay.set(jwks: try await realJWKS())
        let header = answer.signature.prefix { $0 != "." }
        let signature = answer.signature.split(separator: ".", omittingEmptySubsequences: false)[2]
        func encoded(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let kid = try JSONWebKeySet.keyID(of: answer.signature)
        let cases: [(String, String)] = [
            ("\(header).cGF5bG9hZA.\(signature)", "Insight-Signature is not a JWS with a detached payload (header..signature)"),
            ("\(header)..", "the JWS signature is not 64 bytes of base64url"),
            ("\(header)..\(signature)x", "the JWS signature is not 64 bytes of base64url"),
            ("bm90IGpzb24..\(signature)", "the JWS header is not base64url JSON"),
            ("\(encoded(#"{"alg":"HS256","kid":"\#(kid)"}"#))..\(signature)", "the JWS alg is not EdDSA"),
            ("\(encoded(#"{"alg":"EdDSA"}"#))..\(signature)", "the JWS header has no kid"),
            ("\(encoded(#"{"alg":"EdDSA","kid":"\#(kid)","crit":["b64"],"b64":false}"#))..\(signature)",
             "the JWS header names critical extensions"),
            // A header the key did not sign: the signing input changes.
            ("\(encoded(#"{"kid":"\#(kid)","alg":"EdDSA"}"#))..\(signature)", "the signature does not match the body (key \(kid))"),
        ]
        for (value, detail) in cases {
            Replay.set(answer: answer.body, headers: ["Insight-Signature": value])
            let error = await evaluationError { () async throws(EvaluationError) in
                try await replayEvaluator().requestEvaluation(context: Self.context)
            }
            XCTAssertEqual(error, .signatureInvalid(detail: detail), value)
        }
    }

    func testAnUnknownKeyRefreshesTheKeySetOnceThenFails() async throws {
        let answer = try await realAnswer()
        let kid = try JSONWebKeySet.keyID(of: answer.signature)
        Replay.set(answer: answer.body, headers: ["Insight-Signature": answer.signature])
        Replay.set(jwks: Data(#"{"keys":[]}"#.utf8))
        let evaluator = replayEvaluator()
        let error = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .signatureInvalid(detail: "key \(kid) is not in the service's JWKS"))
        let fetches = Replay.requests(to: "/v1/signing-keys")
        XCTAssertEqual(fetches.count, 2, "fetched, then fetched again once")
        XCTAssertNil(fetches.first?["cache-control"])
        XCTAssertEqual(fetches.last?["cache-control"], "no-cache", "the second fetch passes any cache")

        // The key published meanwhile (a rotation seen late): the refresh finds it.
        Replay.reset()
        Replay.set(answer: answer.body, headers: ["Insight-Signature": answer.signature])
        Replay.set(jwks: Data(#"{"keys":[]}"#.utf8), then: try await realJWKS())
        let fresh = replayEvaluator()
        let evaluation = try await fresh.requestEvaluation(context: Self.context)
        XCTAssertEqual(evaluation.signature?.keyID, kid)
        XCTAssertEqual(Replay.requests(to: "/v1/signing-keys").count, 2)
        // Known now: the next answer needs no fetch.
        _ = try await fresh.requestEvaluation(context: Self.context)
        XCTAssertEqual(Replay.requests(to: "/v1/signing-keys").count, 2)
    }

    func testAnUnusableKeySetFails() async throws {
        let answer = try await realAnswer()
        Replay.set(answer: answer.body, headers: ["Insight-Signature": answer.signature])
        for jwks in [#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k"}]}"#, #"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k"}]}"#,
                     #"{"nokeys":[]}"#] {
            Replay.set(jwks: Data(jwks.utf8))
            let error = await evaluationError { () async throws(EvaluationError) in
                try await replayEvaluator().requestEvaluation(context: Self.context)
            }
            guard case .unexpectedResponse? = error else { return XCTFail("\(jwks): \(String(describing: error))") }
        }
        // A failing JWKS request is that request's error.
        Replay.set(jwks: nil)
        let error = await evaluationError { () async throws(EvaluationError) in
            try await replayEvaluator().requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .notFound)
    }

    // MARK: - Support

    static let requestID = "req-replayed"
    static let context = InsightContext(operationCategory: .payment, requestID: requestID)

    /// A real answer of the daemon, with the request id the replayed evaluations send.
    func realAnswer() async throws -> (body: Data, signature: String) {
        var request = URLRequest(url: daemon.baseURL.appendingPathComponent("v1/evaluations"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"requestId":"\#(Self.requestID)","operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#.utf8)
        let (body, response) = try await URLSession.shared.data(for: request)
        let http = try XCTUnwrap(response as? HTTPURLResponse)
        XCTAssertEqual(http.statusCode, 200)
        return (body, try XCTUnwrap(http.value(forHTTPHeaderField: "Insight-Signature")))
    }

    func realJWKS() async throws -> Data {
        try await URLSession.shared.data(from: daemon.baseURL.appendingPathComponent("v1/signing-keys")).0
    }

    /// An evaluator whose requests `Replay` answers.
    func replayEvaluator(_ verification: SignatureVerification = .required) -> InsightEvaluator {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [Replay.self]
        return InsightEvaluator(baseURL: URL(string: "http://replay.invalid")!, apiKey: key,
                                session: URLSession(configuration: configuration), retryPolicy: .never,
                                signatureVerification: verification)
    }
}

func verificationError(_ body: () throws(EvaluationError) -> Void) -> EvaluationError? {
    do { try body(); return nil } catch { return error }
}

/// Answers the evaluator's requests with responses a test set: the evaluation's, and the key
/// set's (one per fetch in turn, the last repeated; nil: a 404 problem). Records each
/// request's headers by path.
final class Replay: URLProtocol {
    private struct State {
        var answer: (body: Data, headers: [String: String])?
        var jwks: [Data?] = []
        var requests: [(path: String, headers: [String: String])] = []
    }

    private static let state = Mutex(State())

    static func reset() { state.withLock { $0 = State() } }
    static func set(answer: Data, headers: [String: String]) { state.withLock { $0.answer = (answer, headers) } }
    static func set(jwks: Data?, then later: Data? = nil) {
        state.withLock { $0.jwks = later.map { [jwks, $0] } ?? [jwks] }
    }
    /// The headers of each request to `path`, names lowercased.
    static func requests(to path: String) -> [[String: String]] {
        state.withLock { $0.requests.filter { $0.path == path }.map(\.headers) }
    }

    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let url = request.url!, path = url.path
        var headers: [String: String] = [:]
        for (name, value) in request.allHTTPHeaderFields ?? [:] { headers[name.lowercased()] = value }
        let reply: (Int, [String: String], Data) = Self.state.withLock { state in
            state.requests.append((path, headers))
            let problem = Data(#"{"type":"urn:insightd:problem:notFound","title":"Not found","status":404,"code":"notFound","detail":"-"}"#.utf8)
            switch path {
            case "/v1/evaluations":
                guard let answer = state.answer else { return (404, ["Content-Type": "application/problem+json"], problem) }
                return (200, answer.headers.merging(["Content-Type": "application/json"]) { $1 }, answer.body)
            case "/v1/signing-keys":
                let next = state.jwks.count > 1 ? state.jwks.removeFirst() : state.jwks.first ?? nil
                guard let jwks = next else { return (404, ["Content-Type": "application/problem+json"], problem) }
                return (200, ["Content-Type": "application/json"], jwks)
            default:
                return (404, ["Content-Type": "application/problem+json"], problem)
            }
        }
        let response = HTTPURLResponse(url: url, statusCode: reply.0, httpVersion: "HTTP/1.1", headerFields: reply.1)!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: reply.2)
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}
