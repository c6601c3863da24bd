import Crypto
import DaemonTesting
import Foundation
import InsightClient
import Synchronization
import XCTest
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Pinned signing keys (issue 45): a proxy in front of a live daemon that serves a key set of its
/// own and re-signs the answers it downgraded — what clients/conformance/tamper_proxy.py
/// `--rekey` does for the other clients — passes an evaluator that trusts its base URL's JWKS,
/// and fails one that pins the daemon's keys, by thumbprint or by key. A pinned evaluator still
/// verifies the daemon's own answers, and follows a rotation to a key pinned ahead.
final class KeyPinningTests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.live)
        key = try daemon.createKey(roles: ["evaluate"])
        RekeyingProxy.start(upstream: daemon.baseURL)
    }

    override func tearDown() {
        daemon = nil
    }

    func testARekeyingProxyPassesWithoutPinsAndFailsWithThem() async throws {
        // Without pins, the proxy's key set is trusted: the downgrade verifies.
        let unpinned = try await throughProxy(pins: nil).requestEvaluation(context: Self.context, options: Self.high)
        XCTAssertEqual(unpinned.receipt?.keyID, RekeyingProxy.kid)
        XCTAssertEqual(unpinned.receipt?.instance, "rekeying-proxy")
        XCTAssertEqual(unpinned.isLikelyBeingCoached?.outcome, .success(.unknown))
        XCTAssertEqual(unpinned.decision?.action, .proceed)

        let real = try JSONWebKeySet(jwks: try await jwks())
        let pinned = real.keyIDs.joined(separator: ", ")
        for pins in [SigningKeyPins(thumbprints: real.keyIDs), SigningKeyPins(keys: real)] {
            let evaluator = throughProxy(pins: pins)
            let fetches = RekeyingProxy.keyFetches
            let error = await evaluationError { () async throws(EvaluationError) in
                try await evaluator.requestEvaluation(context: Self.context, options: Self.high)
            }
            XCTAssertEqual(error, .receiptInvalid(detail: "key \(RekeyingProxy.kid) is not pinned (pinned: \(pinned))"))
            XCTAssertEqual(RekeyingProxy.keyFetches, fetches, "an unpinned kid is refused without a fetch")
        }
    }

    /// The proxy's key served under the daemon's kid: not that kid's thumbprint, so the key set
    /// is refused rather than the pin fooled.
    func testAKeyPosingAsAPinnedOneIsRefused() async throws {
        let kid = try JSONWebKeySet(jwks: try await jwks()).keyIDs[0]
        RekeyingProxy.start(upstream: daemon.baseURL, posingAs: kid)
        let evaluator = throughProxy(pins: SigningKeyPins(thumbprints: [kid]))
        let error = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: Self.context, options: Self.high)
        }
        guard case .unexpectedResponse(let detail)? = error else { return XCTFail(String(describing: error)) }
        XCTAssertEqual(detail, "kid \(kid) is not the RFC 7638 thumbprint of its key")
    }

    func testPinnedEvaluatorsVerifyTheDaemonAndFollowARotationToAPinnedKey() async throws {
        let current = try JSONWebKeySet(jwks: try await jwks())
        let byKey = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never, signingKeyPins: SigningKeyPins(keys: current))
        let high = try await byKey.requestEvaluation(context: Self.context, options: Self.high)
        XCTAssertEqual(high.isLikelyBeingCoached?.outcome, .success(.high))
        XCTAssertEqual(high.decision?.action, .confirmOutOfBand)

        let onlyCurrent = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never,
            signingKeyPins: SigningKeyPins(thumbprints: current.keyIDs))
        _ = try await onlyCurrent.requestEvaluation(context: Self.context)
        // The next key is known before it signs (docs/operations.md, "Signing keys"): pinned
        // beside the current one, it verifies once it does; an evaluator without it refuses.
        let next = try daemon.rotateSigningKey()
        let withNext = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never,
            signingKeyPins: SigningKeyPins(thumbprints: current.keyIDs + [next]))
        let rotated = try await withNext.requestEvaluation(context: Self.context)
        XCTAssertEqual(rotated.receipt?.keyID, next)
        let error = await evaluationError { () async throws(EvaluationError) in
            try await onlyCurrent.requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(error, .receiptInvalid(detail: "key \(next) is not pinned (pinned: \(current.keyIDs.joined(separator: ", ")))"))
        // Allowing unpinned keys (while rolling pins out) accepts it.
        let lenient = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never,
            signingKeyPins: SigningKeyPins(thumbprints: current.keyIDs, allowUnpinnedKeys: true))
        let accepted = try await lenient.requestEvaluation(context: Self.context)
        XCTAssertEqual(accepted.receipt?.keyID, next)
        // Pins that pin nothing trust nothing.
        let empty = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never, signingKeyPins: SigningKeyPins(thumbprints: []))
        let refused = await evaluationError { () async throws(EvaluationError) in
            try await empty.requestEvaluation(context: Self.context)
        }
        XCTAssertEqual(refused, .receiptInvalid(detail: "key \(next) is not pinned (pinned: none)"))
    }

    // MARK: - Support

    static let context = InsightContext(operationCategory: .payment)
    static let high = RequestOptions.insightOverride("isLikelyBeingCoached=high")

    func jwks() async throws -> Data {
        try await URLSession.shared.data(from: daemon.baseURL.appendingPathComponent("v1/signing-keys")).0
    }

    /// An evaluator whose requests go through `RekeyingProxy` to the daemon.
    func throughProxy(pins: SigningKeyPins?) -> InsightEvaluator {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [RekeyingProxy.self]
        return InsightEvaluator(
            baseURL: URL(string: "http://rekeying.invalid")!, apiKey: key,
            session: URLSession(configuration: configuration), retryPolicy: .never, signingKeyPins: pins)
    }
}

/// A re-keying proxy in front of a daemon, as a URL protocol: it forwards every request to
/// `upstream`, answers `GET /v1/signing-keys` itself with a JWKS of one key of its own (under its
/// thumbprint, or under the kid it poses as), and hands every `200` of `POST /v1/evaluations` on
/// downgraded (`high` to `unknown`, `confirmOutOfBand` to `proceed`) with an `Insight-Receipt`
/// that its key signs: a tree of that one answer, whose head is the daemon's head payload with
/// the proxy's instance, sequence, size, root and previous.
final class RekeyingProxy: URLProtocol {
    private struct State {
        var upstream: URL
        var signer: JWSSigner
        var jwks: Data
        var sequence: Int64 = 0
        var previous: String?
        var keyFetches = 0
    }

    private static let state = Mutex<State?>(nil)

    static func start(upstream: URL, posingAs kid: String? = nil) {
        let (key, _) = Ed25519SigningKey.generate()
        let keyID = kid ?? Ed25519JWK.thumbprint(publicKey: key.publicKey)
        let jwks =
            #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"\#(Base64URL.encode(key.publicKey))","kid":"\#(keyID)","use":"sig","alg":"EdDSA"}]}"#
        state.withLock { $0 = State(upstream: upstream, signer: JWSSigner(key: key, keyId: keyID), jwks: Data(jwks.utf8)) }
    }

    static var kid: String { state.withLock { $0!.signer.keyId } }
    static var keyFetches: Int { state.withLock { $0!.keyFetches } }

    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let url = request.url!
        if url.path == "/v1/signing-keys" {
            let jwks = Self.state.withLock { state -> Data in
                state!.keyFetches += 1
                return state!.jwks
            }
            return answer(status: 200, headers: ["Content-Type": "application/json"], body: jwks)
        }
        let upstream = Self.state.withLock { $0!.upstream }
        var forwarded = URLRequest(url: upstream.appendingPathComponent(url.path))
        forwarded.httpMethod = request.httpMethod
        forwarded.httpBody = request.httpBody ?? request.httpBodyStream.map(Self.read)
        for (name, value) in request.allHTTPHeaderFields ?? [:] { forwarded.setValue(value, forHTTPHeaderField: name) }
        let this = UncheckedSendable(self)
        let request = UncheckedSendable(forwarded)
        // Off the loading system's queue, which a new task and the client's callbacks both wait
        // for (synchronously): from it, they would deadlock.
        DispatchQueue.global().async {
            URLSession.shared.dataTask(with: request.value) { data, response, error in
                DispatchQueue.global().async { this.value.forwarded(url: url, data: data, response: response, error: error) }
            }.resume()
        }
    }

    func forwarded(url: URL, data: Data?, response: URLResponse?, error: (any Error)?) {
        guard let data, let http = response as? HTTPURLResponse else {
            return fail(error ?? URLError(.badServerResponse))
        }
        var headers: [String: String] = [:]
        for case (let name as String, let value as String) in http.allHeaderFields { headers[name] = value }
        guard url.path == "/v1/evaluations", http.statusCode == 200,
            let (body, receipt) = Self.resign(data, receipt: http.value(forHTTPHeaderField: "Insight-Receipt"))
        else { return answer(status: http.statusCode, headers: headers, body: data) }
        headers = headers.filter { $0.key.lowercased() != "insight-receipt" && $0.key.lowercased() != "content-length" }
        headers["Insight-Receipt"] = receipt
        answer(status: http.statusCode, headers: headers, body: body)
    }

    override func stopLoading() {}

    /// The downgraded body and a receipt for it that the proxy's key signs; nil if the daemon's
    /// receipt cannot be read.
    static func resign(_ data: Data, receipt: String?) -> (Data, String)? {
        let text = String(decoding: data, as: UTF8.self)
            .replacingOccurrences(of: #""high""#, with: #""unknown""#)
            .replacingOccurrences(of: #""confirmOutOfBand""#, with: #""proceed""#)
        let body = Data(text.utf8)
        guard let receipt, receipt.hasPrefix(#"head=""#),
            let realHead = receipt.split(separator: "\"").dropFirst().first,
            let encoded = realHead.split(separator: ".").dropFirst().first,
            let realPayload = Base64URL.decode(String(encoded)),
            var payload = (try? JSONSerialization.jsonObject(with: Data(realPayload))) as? [String: Any]
        else { return nil }
        return state.withLock { state -> (Data, String)? in
            payload["instance"] = "rekeying-proxy"
            payload["sequence"] = state!.sequence
            payload["size"] = 1
            payload["root"] = Base64URL.encode(MerkleTree.leafHash(of: Array(body)))
            payload["previous"] = state!.previous ?? NSNull()
            guard let json = try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]),
                let head = state!.signer.compactSerialization(of: Array(json))
            else { return nil }
            state!.sequence += 1
            state!.previous = Base64URL.encode(SHA256.digest(head))
            return (body, #"head="\#(head)", index=0, path=()"#)
        }
    }

    static func read(_ stream: InputStream) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        stream.open()
        defer { stream.close() }
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            data.append(buffer, count: count)
        }
        return data
    }

    func answer(status: Int, headers: [String: String], body: Data) {
        let response = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: body)
        client?.urlProtocolDidFinishLoading(self)
    }

    func fail(_ error: any Error) { client?.urlProtocol(self, didFailWithError: error) }
}

/// Hands a URL protocol to the completion of the request it forwards (URLProtocol is not
/// Sendable; the loading system calls it back on any thread).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
