import Crypto
import DaemonTesting
import Foundation
import InsightClient
import InsightDomain
import Synchronization
import XCTest
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client verifies every answer's `Insight-Receipt` by default: against a real daemon
/// (rotation included), and against real answers and key sets replayed with one thing changed,
/// for each way a receipt can fail — its header, its head's JWS, its path, its place in the
/// instance's chain, and the tenant and environment its answer names.
final class ReceiptVerificationTests: XCTestCase {
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

    func testAnswersAreVerifiedAndTheProofVerifiesLaterAcrossARotation() async throws {
        let evaluator = InsightEvaluator(baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never)
        let first = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        let proof = try XCTUnwrap(first.receipt, "verified answers carry their proof")
        XCTAssertEqual(try JSONWebKeySet.keyID(of: proof.header), proof.keyID)
        XCTAssertTrue(String(decoding: proof.body, as: UTF8.self).contains(first.eventID), "the proof holds the exact body")
        XCTAssertEqual(proof.scope, AnswerScope(tenant: "default", environment: .sandbox))
        XCTAssertEqual(first.tenant, "default")

        // The next answer's head follows the first one's in the instance's chain.
        let next = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        let nextProof = try XCTUnwrap(next.receipt)
        XCTAssertEqual(nextProof.instance, proof.instance)
        XCTAssertEqual(nextProof.sequence, proof.sequence + 1)
        XCTAssertEqual(nextProof.previous, proof.headHash)

        // After a rotation the head names a key the evaluator has not fetched: it fetches once more.
        let newKey = try daemon.rotateSigningKey()
        let second = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        XCTAssertEqual(second.receipt?.keyID, newKey)
        XCTAssertNotEqual(newKey, proof.keyID)

        // Later, anyone with the JWKS checks the stored proof.
        let (jwks, _) = try await URLSession.shared.data(from: daemon.baseURL.appendingPathComponent("v1/signing-keys"))
        let keys = try JSONWebKeySet(jwks: jwks)
        XCTAssertEqual(Set(keys.keyIDs), [proof.keyID, newKey])
        XCTAssertEqual(try keys.verify(body: proof.body, receipt: proof.header), proof)
        var tampered = proof.body
        tampered[tampered.startIndex + 2] ^= 1
        XCTAssertEqual(
            verificationError { () throws(EvaluationError) in try keys.verify(body: tampered, receipt: proof.header) },
            .receiptInvalid(detail: "the body and the audit path do not lead to the signed root"))
    }

    func testVerificationCanBeTurnedOff() async throws {
        let answer = try await realAnswer()
        Replay.set(answer: answer.body, headers: [:])  // no receipt at all
        let evaluator = replayEvaluator(.disabled)
        let evaluation = try await evaluator.requestEvaluation(context: Self.context)
        XCTAssertNil(evaluation.receipt)
        XCTAssertEqual(Replay.requests(to: "/v1/signing-keys").count, 0, "no key set fetched")
    }

    func testAMissingReceiptFails() async throws {
        Replay.set(answer: try await realAnswer().body, headers: [:])
        let error = await evaluationError { () async throws(EvaluationError) in
            try await replayEvaluator().requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .receiptInvalid(detail: "the answer carries no Insight-Receipt"))
        XCTAssertEqual(Replay.requests(to: "/v1/evaluations").count, 1, "a receipt failure is not retried")
    }

    func testATamperedBodyFails() async throws {
        let answer = try await realAnswer()
        Replay.set(jwks: try await realJWKS())
        let text = String(decoding: answer.body, as: UTF8.self)
        let body = Data(text.replacingOccurrences(of: #""environment":"sandbox""#, with: #""environment":"production""#).utf8)
        XCTAssertNotEqual(body, answer.body)
        Replay.set(answer: body, headers: ["Insight-Receipt": answer.receipt])
        let error = await evaluationError { () async throws(EvaluationError) in
            try await replayEvaluator().requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .receiptInvalid(detail: "the body and the audit path do not lead to the signed root"))
    }

    func testMalformedReceiptsFail() async throws {
        let answer = try await realAnswer()
        Replay.set(jwks: try await realJWKS())
        let receipt = try members(answer.receipt)
        let parts = receipt.head.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let (header, payload, signature) = (parts[0], parts[1], parts[2])
        func encoded(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }
        func with(head: String) -> String { #"head="\#(head)", index=\#(receipt.index), path=\#(receipt.path)"# }
        let kid = try JSONWebKeySet.keyID(of: answer.receipt)
        let malformed = "Insight-Receipt is not an RFC 8941 dictionary"
        let cases: [(String, String)] = [
            // The dictionary.
            (#"head=\#(receipt.head), index=0, path=()"#, "\(malformed) (member head)"),
            (#"head="\#(receipt.head)", index=x, path=()"#, "\(malformed) (member index)"),
            (#"head="\#(receipt.head)", index=0, path=(:not base64:)"#, "\(malformed) (member path)"),
            (#"head="\#(receipt.head)", index=0, path=()  ,"#, "\(malformed) (a trailing comma)"),
            (#"head="\#(receipt.head)"; index=0"#, "\(malformed) (the separator after head)"),
            (#"Head="\#(receipt.head)""#, "\(malformed) (a member's key)"),
            (#"head="\#(receipt.head)", index=0"#, "Insight-Receipt lacks head, index or path"),
            // The head's JWS.
            (with(head: "\(header)..\(signature)"), "the receipt's head is not a JWS compact serialization"),
            (with(head: "\(header).\(payload)."), "the JWS signature is not 64 bytes of base64url"),
            (with(head: "bm90IGpzb24.\(payload).\(signature)"), "the JWS header is not base64url JSON"),
            (with(head: "\(encoded(#"{"alg":"HS256","kid":"\#(kid)"}"#)).\(payload).\(signature)"), "the JWS alg is not EdDSA"),
            (with(head: "\(encoded(#"{"alg":"EdDSA"}"#)).\(payload).\(signature)"), "the JWS header has no kid"),
            (
                with(head: "\(encoded(#"{"alg":"EdDSA","kid":"\#(kid)","crit":["b64"],"b64":false}"#)).\(payload).\(signature)"),
                "the JWS header names critical extensions"
            ),
            // A header or a payload the key did not sign.
            (
                with(head: "\(encoded(#"{"kid":"\#(kid)","alg":"EdDSA"}"#)).\(payload).\(signature)"),
                "the head's signature does not verify (key \(kid))"
            ),
            (
                with(
                    head:
                        "\(header).\(encoded(#"{"instance":"x","sequence":0,"size":1,"root":"AA","previous":null,"time":0}"#)).\(signature)"
                ),
                "the head's signature does not verify (key \(kid))"
            ),
            // The path: another index of a tree of one leaf.
            (#"head="\#(receipt.head)", index=1, path=\#(receipt.path)"#, "the body and the audit path do not lead to the signed root")
        ]
        for (value, detail) in cases {
            Replay.set(answer: answer.body, headers: ["Insight-Receipt": value])
            let error = await evaluationError { () async throws(EvaluationError) in
                try await replayEvaluator().requestEvaluation(context: Self.context)
            }
            XCTAssertEqual(error, .receiptInvalid(detail: detail), value)
        }
        // A member a later service adds is skipped.
        Replay.set(answer: answer.body, headers: ["Insight-Receipt": answer.receipt + #", later="x", flag=?1"#])
        let evaluation = try await replayEvaluator().requestEvaluation(context: Self.context)
        XCTAssertEqual(evaluation.receipt?.keyID, kid)
    }

    /// A head the daemon's key signed but that does not follow the head the evaluator saw before
    /// (a forged `previous`), or a second, different head of one sequence (a forked chain).
    func testAHeadOutOfTheChainFails() async throws {
        let first = try await realAnswer()
        Replay.set(jwks: try await realJWKS())
        let evaluator = replayEvaluator()
        Replay.set(answer: first.body, headers: ["Insight-Receipt": first.receipt])
        let evaluated = try await evaluator.requestEvaluation(context: Self.context)
        let seen = try XCTUnwrap(evaluated.receipt)

        let signer = try XCTUnwrap(daemon.service.signingKeys.set.current(at: SystemClock().now())?.signer)
        func signed(sequence: Int64, previous: [UInt8]?, time: Milliseconds? = nil, tenant: String? = nil) throws -> String {
            // Of the seen head's chain (the same instance, tenant and environment) unless told otherwise.
            let head = ReceiptHead(
                instance: seen.instance, tenant: tenant ?? seen.headScope?.tenant, environment: seen.headScope?.environment.rawValue,
                sequence: sequence, size: 1,
                root: MerkleTree.leafHash(of: Array(first.body)), previous: previous, time: time ?? seen.time)
            return #"head="\#(try XCTUnwrap(signer.compactSerialization(of: head.payload)))", index=0, path=()"#
        }
        let cases = [
            (
                try signed(sequence: seen.sequence + 1, previous: Array(repeating: 7, count: 32)),
                "head \(seen.sequence + 1) of instance \(seen.instance) does not follow head \(seen.sequence)"
            ),
            (
                try signed(sequence: seen.sequence, previous: seen.previous.map(Array.init), time: seen.time + 1),
                "two heads \(seen.sequence) of instance \(seen.instance): its chain forked"
            ),
            (
                try signed(sequence: 0, previous: nil, tenant: "globex"),
                "the head is tenant globex's in \(seen.scope.environment.rawValue), not the answer's"
            )
        ]
        for (receipt, detail) in cases {
            Replay.set(answer: first.body, headers: ["Insight-Receipt": receipt])
            let error = await evaluationError { () async throws(EvaluationError) in
                try await evaluator.requestEvaluation(context: Self.context)
            }
            XCTAssertEqual(error, .receiptInvalid(detail: detail))
        }
        // A head of no tenant, or of another tenant's chain, is no head of this one: not compared with it.
        XCTAssertNotNil(seen.headScope, "the daemon's head names its tenant and environment")
        // The true successor passes.
        Replay.set(
            answer: first.body, headers: ["Insight-Receipt": try signed(sequence: seen.sequence + 1, previous: Array(seen.headHash))])
        _ = try await evaluator.requestEvaluation(context: Self.context)
    }

    /// The answer binds its tenant and environment: a sandbox answer does not pass where a
    /// production one is expected, and an evaluator without an expectation holds to the first
    /// answer's.
    func testAnAnswerOfAnotherScopeFails() async throws {
        let sandbox = try await realAnswer()
        let production = try await realAnswer(key: try daemon.createKey(roles: ["evaluate"], environment: "production"))
        Replay.set(jwks: try await realJWKS())
        Replay.set(answer: sandbox.body, headers: ["Insight-Receipt": sandbox.receipt])
        let expecting = replayEvaluator(expecting: AnswerScope(tenant: "default", environment: .production))
        let error = await evaluationError { () async throws(EvaluationError) in
            try await expecting.requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .receiptInvalid(detail: "the answer is tenant default's in sandbox, not default's in production"))

        let pinned = replayEvaluator()
        _ = try await pinned.requestEvaluation(context: Self.context)
        Replay.set(answer: production.body, headers: ["Insight-Receipt": production.receipt])
        let switched = await evaluationError { () async throws(EvaluationError) in
            try await pinned.requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(switched, .receiptInvalid(detail: "the answer is tenant default's in production, not default's in sandbox"))
        _ = try await replayEvaluator(expecting: AnswerScope(tenant: "default", environment: .production))
            .requestEvaluation(context: Self.context)
    }

    func testAnUnknownKeyRefreshesTheKeySetOnceThenFails() async throws {
        let answer = try await realAnswer()
        let kid = try JSONWebKeySet.keyID(of: answer.receipt)
        Replay.set(answer: answer.body, headers: ["Insight-Receipt": answer.receipt])
        Replay.set(jwks: Data(#"{"keys":[]}"#.utf8))
        let evaluator = replayEvaluator()
        let error = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .receiptInvalid(detail: "key \(kid) is not in the service's JWKS"))
        let fetches = Replay.requests(to: "/v1/signing-keys")
        XCTAssertEqual(fetches.count, 2, "fetched, then fetched again once")
        XCTAssertNil(fetches.first?["cache-control"])
        XCTAssertEqual(fetches.last?["cache-control"], "no-cache", "the second fetch passes any cache")

        // The key published meanwhile (a rotation seen late): the refresh finds it.
        Replay.reset()
        Replay.set(answer: answer.body, headers: ["Insight-Receipt": answer.receipt])
        Replay.set(jwks: Data(#"{"keys":[]}"#.utf8), then: try await realJWKS())
        let fresh = replayEvaluator()
        let evaluation = try await fresh.requestEvaluation(context: Self.context)
        XCTAssertEqual(evaluation.receipt?.keyID, kid)
        XCTAssertEqual(Replay.requests(to: "/v1/signing-keys").count, 2)
        // Known now: the next answer needs no fetch.
        _ = try await fresh.requestEvaluation(context: Self.context)
        XCTAssertEqual(Replay.requests(to: "/v1/signing-keys").count, 2)
    }

    func testAnUnusableKeySetFails() async throws {
        let answer = try await realAnswer()
        Replay.set(answer: answer.body, headers: ["Insight-Receipt": answer.receipt])
        for jwks in [
            #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k"}]}"#, #"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k"}]}"#,
            #"{"nokeys":[]}"#
        ] {
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
    func realAnswer(key: String? = nil) async throws -> (body: Data, receipt: String) {
        var request = URLRequest(url: daemon.baseURL.appendingPathComponent("v1/evaluations"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(key ?? self.key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(
            #"{"requestId":"\#(Self.requestID)","operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#
                .utf8)
        let (body, response) = try await URLSession.shared.data(for: request)
        let http = try XCTUnwrap(response as? HTTPURLResponse)
        XCTAssertEqual(http.statusCode, 200)
        return (body, try XCTUnwrap(http.value(forHTTPHeaderField: "Insight-Receipt")))
    }

    /// A receipt's members as the daemon writes them (`path` with its parentheses).
    func members(_ receipt: String) throws -> (head: String, index: Int, path: String) {
        let parts = receipt.components(separatedBy: ", ")
        XCTAssertEqual(parts.count, 3)
        return (
            String(parts[0].dropFirst(#"head=""#.count).dropLast()), try XCTUnwrap(Int(parts[1].dropFirst("index=".count))),
            String(parts[2].dropFirst("path=".count))
        )
    }

    func realJWKS() async throws -> Data {
        try await URLSession.shared.data(from: daemon.baseURL.appendingPathComponent("v1/signing-keys")).0
    }

    /// An evaluator whose requests `Replay` answers.
    func replayEvaluator(_ verification: ReceiptVerification = .required, expecting scope: AnswerScope? = nil) -> InsightEvaluator {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [Replay.self]
        return InsightEvaluator(
            baseURL: URL(string: "http://replay.invalid")!, apiKey: key,
            session: URLSession(configuration: configuration), retryPolicy: .never,
            receiptVerification: verification, expectedScope: scope)
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
            let problem = Data(
                #"{"type":"urn:insightd:problem:notFound","title":"Not found","status":404,"code":"notFound","detail":"-"}"#.utf8)
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
