// insightd-demo: the story a new integrator reads first. A payments backend asks insightd
// whether the person sending money is likely being coached by a scammer, changes its flow
// according to the answer, and reports how it used the answer.
//
//   INSIGHTD_API_KEY=<sandbox key> insightd-demo --url http://127.0.0.1:8080
//
// With --web, the same backend serves a payment page that captures the interaction in the
// browser with capture/web/insight-capture.js (WebDemo.swift).
//
// Create a sandbox key with:
//   insightctl callers create --name demo --roles evaluate --environment sandbox
import Foundation
import HTTPServer
import InsightClient

// MARK: - Arguments

let usage = """
    usage: INSIGHTD_API_KEY=KEY insightd-demo [--url URL] [--no-overrides]
           INSIGHTD_API_KEY=KEY insightd-demo --web [--listen HOST:PORT] [--url URL]

      INSIGHTD_API_KEY  an API key with the evaluate role, preferably a sandbox key. Create one with:
                        insightctl callers create --name demo --roles evaluate --environment sandbox
                        (--key KEY also works, but a key on the command line is visible to every
                        user of the machine through ps)
      --url URL         insightd's base URL (default http://127.0.0.1:8080)
      --no-overrides    skip step 3, which forces each outcome with the sandbox Insight-Override header
      --web             serve a payment page that captures the interaction in the browser (the kit of
                        capture/web) and evaluates each payment, until stopped (Ctrl-C)
      --listen H:P      where --web serves the page (default 127.0.0.1:8090; port 0: a free one)

    """

var urlText = "http://127.0.0.1:8080"
var apiKey = ProcessInfo.processInfo.environment["INSIGHTD_API_KEY"]
var showOverrides = true
var web = false
var listen = "127.0.0.1:8090"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--url": urlText = arguments.popFirst() ?? ""
    case "--key": apiKey = arguments.popFirst()
    case "--no-overrides": showOverrides = false
    case "--web": web = true
    case "--listen": listen = arguments.popFirst() ?? ""
    case "--help", "-h": print(usage, terminator: ""); exit(0)
    default: FileHandle.standardError.write(Data("unknown argument \(argument)\n\(usage)".utf8)); exit(2)
    }
}
guard let baseURL = URL(string: urlText), baseURL.scheme == "http" || baseURL.scheme == "https" else {
    FileHandle.standardError.write(Data("--url must be an http or https URL\n".utf8)); exit(2)
}
guard let apiKey, !apiKey.isEmpty else {
    FileHandle.standardError.write(Data("an API key is required (INSIGHTD_API_KEY, or --key)\n\(usage)".utf8)); exit(2)
}

// MARK: - The sessions a client app observed

/// Timing only, never what was typed. A person paying a known payee: steady typing, no call.
func genuineSession() -> Interaction {
    var events = [InteractionEvent(at: 0, .sessionStart), InteractionEvent(at: 1400, .fieldFocus, field: .payee)]
    var t = 1400
    for i in 0..<22 { t += 140 + (i % 3) * 25; events.append(InteractionEvent(at: t, .keyDown, field: .payee)) }
    t += 900; events.append(InteractionEvent(at: t, .fieldFocus, field: .amount))
    for _ in 0..<3 { t += 160; events.append(InteractionEvent(at: t, .keyDown, field: .amount)) }
    t += 1800; events.append(InteractionEvent(at: t, .submit))
    return .events(events, device: DeviceFacts(activeCall: false, screenSharing: false))
}

/// A person on the phone with a "bank security officer": the call began before the app was
/// opened, the screen is shared, the phone is held to the ear, the payee's account number is
/// typed in dictated bursts, and there is a long hesitation before submitting.
func coachedSession() -> Interaction {
    var events = [
        InteractionEvent(at: 0, .sessionStart), InteractionEvent(at: 200, .proximityNear),
        InteractionEvent(at: 9000, .fieldFocus, field: .payee)
    ]
    var t = 9000
    for burst in 0..<6 {
        for _ in 0..<4 { t += 180; events.append(InteractionEvent(at: t, .keyDown, field: .payee)) }
        t += burst % 2 == 0 ? 4200 : 3600
    }
    t += 2000; events.append(InteractionEvent(at: t, .fieldFocus, field: .amount))
    for _ in 0..<4 { t += 900; events.append(InteractionEvent(at: t, .keyDown, field: .amount)) }
    t += 2500; events.append(InteractionEvent(at: t, .delete, field: .amount))
    t += 1500; events.append(InteractionEvent(at: t, .keyDown, field: .amount))
    t += 38000; events.append(InteractionEvent(at: t, .submit))
    return .events(
        events,
        device: DeviceFacts(
            activeCall: true, callStartedBeforeSession: true,
            screenSharing: true, remoteAccessApp: false))
}

// MARK: - The story

let evaluator = InsightEvaluator(baseURL: baseURL, apiKey: apiKey)
var failures = 0
/// Identifiers of this run's made-up customer (insightd hashes them on arrival and never stores
/// them raw); fresh each run so velocity checks from earlier runs do not colour the story.
let runID = UUID().uuidString.prefix(8).lowercased()

if web {
    let server: HTTPServer
    do {
        server = try servePaymentPage(listen: listen, evaluator: evaluator, account: "demo-account-\(runID)")
    } catch {
        FileHandle.standardError.write(Data("insightd-demo: \(error)\n".utf8)); exit(1)
    }
    let host = server.configuration.host
    printLine(
        "insightd-demo: the payment page is at http://\(host):\(server.boundPort)/ (insightd at \(baseURL.absoluteString)); Ctrl-C stops it"
    )
    // The server is used after every sleep: an optimised build otherwise releases it right
    // after the line above, and its deinit stops the server.
    while true {
        try? await Task.sleep(for: .seconds(3600))
        withExtendedLifetime(server) {}
    }
}

func say(_ lines: String...) { for line in lines { print(line) } }

/// Evaluates one session, applies the decision logic, and reports consumption.
@MainActor
func run(
    title: String, interaction: Interaction, transaction: TransactionContext,
    counterparty: String = "demo-payee-\(runID)", options: RequestOptions = RequestOptions()
) async -> InsightEvaluation? {
    say("", "── \(title)")
    // Your server generates the transaction id and binds the evaluation to it: the client
    // refuses a response that carries another id.
    let transactionID = "demo-" + UUID().uuidString.prefix(8).lowercased()
    let context = InsightContext(
        operationCategory: .payment, requestedInsights: [.isLikelyBeingCoached()],
        requestID: transactionID,
        subject: Subject(
            account: "demo-account-\(runID)", device: "demo-install-\(runID)",
            counterparty: counterparty),
        interaction: interaction, transaction: transaction)
    let evaluation: InsightEvaluation
    do {
        evaluation = try await evaluator.requestEvaluation(context: context, options: options)
    } catch {
        explain(error)
        return nil
    }
    let insight = evaluation.isLikelyBeingCoached
    say("   requestEvaluation → eventID \(evaluation.eventID) (\(evaluation.environment)), requestID \(evaluation.requestID) verified")
    if let insight {
        let value = (try? insight.outcome.get().rawValue) ?? "error"
        say(
            "   isLikelyBeingCoached = \(value)   model \(insight.modelVersion ?? "-")"
                + (insight.reasons.isEmpty ? "" : "   reasons: \(insight.reasons.joined(separator: ", "))"))
    }
    let decision = decide(evaluation)
    for line in decision.flow { say("   " + line) }
    // Mandatory: say how the answer was used, before reportConsumptionBy. Unreported
    // evaluations lower your caller's rate limit.
    do {
        try await evaluation.reportConsumption(decision.status, insightIDsUsed: decision.used)
        say("   reportConsumption(.\(decision.status)) → recorded (due by \(evaluation.reportConsumptionBy.formatted(.iso8601)))")
    } catch {
        say("   reportConsumption failed: \(error)")
        failures += 1
    }
    return evaluation
}

/// What each evaluation-level error means for the flow.
@MainActor
func explain(_ error: EvaluationError) {
    switch error {
    case .unauthorized:
        say(
            "   unauthorized: the key is unknown or revoked. Create one:",
            "   insightctl callers create --name demo --roles evaluate --environment sandbox")
        failures += 1
    case .forbidden:
        say("   forbidden: this key lacks the evaluate role.")
        failures += 1
    case .transport(let description):
        say("   insightd is unreachable at \(baseURL.absoluteString) (\(description)). Is it running? (make run)")
        failures += 1
    case .denied:
        say("   denied: this person switched insights off. Flow: your usual risk checks; nothing to report.")
    case .rateLimitExceeded(let retryAfter):
        say(
            "   rateLimitExceeded (retry after \(retryAfter.map { "\(Int($0)) s" } ?? "?")), after the client's own retries.",
            "   Flow: proceed with your usual risk checks; report consumption for every evaluation to avoid this.")
    case .serverError(let status, _):
        say(
            "   serverError (\(status)), after the client's own retries. Nothing was recorded.",
            "   Flow: proceed with your usual risk checks.")
    case .contextInvalid(let field, let detail):
        say("   contextInvalid at \(field ?? "?"): \(detail). A bug in the request: fix it, do not retry.")
    default:
        say("   \(error)")
        failures += 1
    }
}

say(
    "insightd-demo: a payments backend using the isLikelyBeingCoached insight, at \(baseURL.absoluteString)",
    "",
    "Each step: build an InsightContext from what the app observed (timing only), call",
    "requestEvaluation, change the payment flow according to the value, then reportConsumption.")

say("", "Step 1. A genuine payment: steady typing, no phone call.")
let genuine = await run(
    title: "genuine session", interaction: genuineSession(),
    transaction: TransactionContext(newCounterparty: false, amountBand: .low))
if genuine == nil && failures > 0 { say("", "Stopping: fix the problem above and run the demo again."); exit(1) }

say(
    "", "Step 2. A coached payment: a call that began before the session, screen sharing, digits typed",
    "in dictated bursts, a long hesitation before submit.")
_ = await run(
    title: "coached session", interaction: coachedSession(),
    transaction: TransactionContext(newCounterparty: true, amountBand: .high),
    counterparty: "demo-new-payee-\(runID)")

if showOverrides, let genuine {
    if genuine.environment == .sandbox {
        say(
            "", "Step 3. The sandbox can force any outcome with the Insight-Override header, so you can test",
            "every branch of your decision logic. Forced answers carry the reason sandboxOverride.")
        for value in ["unknown", "medium", "high", "error:insightEvaluationFailed"] {
            _ = await run(
                title: "forced isLikelyBeingCoached=\(value)", interaction: genuineSession(),
                transaction: TransactionContext(amountBand: .medium),
                options: .insightOverride("isLikelyBeingCoached=\(value)"))
        }
        say("", "── forced evaluation=error:denied")
        do {
            _ = try await evaluator.requestEvaluation(
                context: InsightContext(operationCategory: .payment),
                options: .insightOverride("evaluation=error:denied"))
            say("   the override was not applied (an older insightd?)")
        } catch {
            explain(error)
        }
    } else {
        say("", "Step 3 skipped: this is a \(genuine.environment) key; Insight-Override is for sandbox keys only.")
    }
}

say(
    "",
    failures == 0
        ? "Done. Next: docs/client.md (the Swift client) and docs/integration.md (when to call, how to handle each value)."
        : "Finished with \(failures) problem(s); see above.")
exit(failures == 0 ? 0 : 1)
