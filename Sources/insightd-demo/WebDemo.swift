// insightd-demo --web: a payment page and its backend. The page loads the capture kit
// (capture/web/insight-capture.js), and on Pay posts the finished interaction here; this backend
// forwards it to insightd with its own server-side key (the browser never sees the key), answers
// the page with the service's decision and reports how the insight was used.
import Foundation
import HTTPServer
import InsightClient

/// The page's files, read once at start: the page's own beside this source file, and the kit
/// from capture/web, so that the demo serves the kit of this repository as it is.
struct PageFiles: Sendable {
    struct File: Sendable { let contentType: String; let bytes: [UInt8] }
    let byPath: [String: File]

    /// Reads the files from `pageDirectory` and the kit; throws naming a missing file.
    init(pageDirectory: URL, kit: URL) throws {
        var files: [String: File] = [:]
        let types = [
            "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
            "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"
        ]
        for name in ["index.html", "pay.css", "pay.js", "icon.svg"] {
            let url = pageDirectory.appendingPathComponent(name)
            files["/" + name] = File(contentType: types[url.pathExtension]!, bytes: Array(try Data(contentsOf: url)))
        }
        files["/"] = files["/index.html"]
        files["/insight-capture.js"] = File(contentType: types["js"]!, bytes: Array(try Data(contentsOf: kit)))
        byPath = files
    }

    /// Where the files are in this repository (the demo runs from its checkout).
    static func repository(sourceFile: String = #filePath) throws -> PageFiles {
        let here = URL(fileURLWithPath: sourceFile).deletingLastPathComponent()
        let root = here.deletingLastPathComponent().deletingLastPathComponent()
        return try PageFiles(
            pageDirectory: here.appendingPathComponent("page"),
            kit: root.appendingPathComponent("capture/web/insight-capture.js"))
    }
}

/// What the page posts to `/api/payments`: the payment's coarse facts and the kit's object.
/// The payment's fields themselves stay on the page in this demo, so that a test can show
/// that nothing typed leaves the browser through the capture.
struct PaymentRequest: Decodable {
    struct Event: Decodable { let t: Int; let type: String; let field: String? }
    struct Source: Decodable { let kit: String; let version: String; let platform: String; let droppedEvents: Int? }
    struct Captured: Decodable { let events: [Event]?; let source: Source? }

    let amountBand: String
    let newPayee: Bool
    let interaction: Captured

    /// The interaction for the Swift client: insightd validates it (a 422 names what is wrong).
    /// An object without events (a page that never started a session) is nothing observed.
    var clientInteraction: Interaction? {
        guard let events = interaction.events else { return nil }
        let source = interaction.source.map {
            InteractionSource(
                kit: $0.kit, version: $0.version, platform: ClientPlatform(rawValue: $0.platform),
                droppedEvents: $0.droppedEvents)
        }
        return .events(
            events.map {
                InteractionEvent(at: $0.t, InteractionEventType(rawValue: $0.type), field: $0.field.map(InteractionField.init(rawValue:)))
            }, source: source)
    }
}

/// The backend's HTTP handler: the page's files with a strict Content-Security-Policy, and
/// `POST /api/payments`.
struct PaymentPage: HTTPHandler {
    let files: PageFiles
    let evaluator: InsightEvaluator
    /// The signed-in customer of this demo (fresh each run, so velocity from earlier runs stays out).
    let account: String

    /// No inline script or style, nothing from elsewhere, no framing: the kit needs nothing more.
    static let securityHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                + "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store")
    ]

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        switch (request.method, request.path) {
        case ("GET", let path):
            guard let file = files.byPath[path] else { return responder.send(Self.json(404, ["error": "not found"])) }
            responder.send(Self.response(200, contentType: file.contentType, file.bytes))
        case ("POST", "/api/payments"):
            let body = request.body
            Task { responder.send(await pay(body)) }
        default:
            responder.send(Self.json(405, ["error": "method not allowed"]))
        }
    }

    func response(for error: HTTPProtocolError) -> HTTPResponse {
        Self.json(error.status, ["error": error.description])
    }

    /// Evaluates the payment, reports consumption, and answers the page with the decision.
    private func pay(_ body: [UInt8]) async -> HTTPResponse {
        let payment: PaymentRequest
        do {
            payment = try JSONDecoder().decode(PaymentRequest.self, from: Data(body))
        } catch {
            return Self.json(400, ["error": "the body is not a payment request"])
        }
        let context = InsightContext(
            operationCategory: .payment, requestedInsights: [.isLikelyBeingCoached()],
            requestID: "web-" + UUID().uuidString.prefix(8).lowercased(),
            subject: Subject(account: account), interaction: payment.clientInteraction,
            transaction: TransactionContext(newCounterparty: payment.newPayee, amountBand: AmountBand(rawValue: payment.amountBand)))
        let evaluation: InsightEvaluation
        do {
            evaluation = try await evaluator.requestEvaluation(context: context)
        } catch .contextInvalid(let field, let detail) {
            // What the page sent is wrong (insightd names it): the page's bug, not insightd's.
            return Self.json(422, ["error": "\(field ?? "request"): \(detail)"])
        } catch {
            printLine("payment: evaluation failed: \(error)")
            return Self.json(502, ["error": "insightd: \(error)"])
        }
        let insight = evaluation.isLikelyBeingCoached
        let coaching = insight.map { (try? $0.outcome.get().rawValue) ?? "error" } ?? "none"
        let action = evaluation.decision?.action.rawValue ?? "proceed"
        let usage = decide(evaluation)
        var consumption = usage.status.rawValue
        do {
            try await evaluation.reportConsumption(usage.status, insightIDsUsed: usage.used)
        } catch {
            consumption = "not reported (\(error))"
        }
        // What an operator may see: the answer, never the interaction.
        printLine("payment \(evaluation.requestID): coaching \(coaching), decision \(action), consumption \(consumption)")
        return Self.json(
            200,
            [
                "action": action, "coaching": coaching, "reasons": insight?.reasons ?? [],
                "modelVersion": insight?.modelVersion ?? "", "eventId": evaluation.eventID,
                "consumption": consumption
            ])
    }

    private static func json(_ status: Int, _ object: [String: Any]) -> HTTPResponse {
        let bytes = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return response(status, contentType: "application/json", Array(bytes))
    }

    private static func response(_ status: Int, contentType: String, _ body: [UInt8]) -> HTTPResponse {
        var headers = HTTPHeaders(securityHeaders)
        headers.set("Content-Type", contentType)
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}

/// Starts the page's server on `listen` (`host:port`; port 0 picks a free one) and returns it.
func servePaymentPage(listen: String, evaluator: InsightEvaluator, account: String) throws -> HTTPServer {
    let parts = listen.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, let port = Int(parts[1]), (0...65535).contains(port) else {
        throw DemoError("--listen must be HOST:PORT, e.g. 127.0.0.1:8090")
    }
    var configuration = HTTPServerConfiguration()
    configuration.host = String(parts[0])
    configuration.port = port
    // 5,000 events of about 50 bytes each, and the rest of the request.
    configuration.maxBodyBytes = 512 << 10
    let server = HTTPServer(
        configuration: configuration,
        handler: PaymentPage(files: try PageFiles.repository(), evaluator: evaluator, account: account))
    try server.start()
    return server
}

/// A start-up problem, printed as it is.
struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Writes a line to stdout at once (print buffers when stdout is a file or a pipe): one line per
/// payment, as it happens.
func printLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
