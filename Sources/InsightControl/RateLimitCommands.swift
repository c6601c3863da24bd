import Foundation
import InsightApp
import JSON

/// `insightctl rate-limit show | reset`: a caller's rate limit as the running daemon holds it
/// (docs/rate-limits.md), through its admin API.
enum RateLimitCommands: CommandGroup {
    static let callerId = Operand("CALLER_ID", "the caller (callers list shows it)")

    static let commands = [
        Command(
            "rate-limit", "show", operands: [callerId], options: DaemonConnection.options + [CommonOptions.json],
            summary: "a caller's rate limit as the running daemon holds it", run: run),
        Command(
            "rate-limit", "reset", operands: [callerId], options: DaemonConnection.options + [CommonOptions.json],
            summary: "clear its penalty and forgive its overdue reports (its bucket is not refilled)", run: run)
    ]

    static func run(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let callerId = invocation.operand(0)
        let reset = invocation.command.words[1] == "reset"
        let view = try context.daemon(invocation).send(
            reset ? "POST" : "GET",
            "admin/v1/callers/\(callerId)/rate-limit" + (reset ? "/reset" : ""), body: nil)
        if reset && !invocation.json {
            print(
                "reset \(callerId): its overdue reports are forgiven (penalty step 0); its bucket is not refilled, it refills at its rate; as it is now:"
            )
        }
        print(invocation.json ? JSONWriter.string(view) : render(view))
        return 0
    }

    /// The admin view of a caller's rate limit as a table an operator reads top to bottom.
    static func render(_ v: JSONValue) -> String {
        func n(_ value: JSONValue?) -> String { value?.numberValue.map(Table.format) ?? "-" }
        func t(_ value: JSONValue?) -> String { value?.stringValue ?? "-" }
        let rows: [[String]] = [
            ["caller", t(v["callerId"]) + " (" + t(v["environment"]) + ")"],
            ["policy", "\(n(v["policy"]?["rate"]))/s, burst \(n(v["policy"]?["burst"]))"],
            ["in force", "\(n(v["effectiveRate"]))/s, burst \(n(v["effectiveBurst"])), \(n(v["tokens"])) tokens now"],
            [
                "penalty",
                "step \(n(v["penalty"]?["step"])) of \(n(v["penalty"]?["maxStep"])) (x\(n(v["penalty"]?["factor"]))): \(t(v["penalty"]?["why"]))"
            ],
            ["window", "last \(n(v["window"]?["seconds"])) s, counted \(t(v["window"]?["countedAt"]))"],
            ["evaluations", n(v["window"]?["evaluations"])],
            ["on time", n(v["window"]?["onTime"])],
            ["late", n(v["window"]?["late"])],
            ["overdue", "\(n(v["window"]?["overdue"])) (allowance \(n(v["window"]?["overdueAllowance"])))"],
            ["pending", n(v["window"]?["pending"])],
            [
                "throttled",
                "\(n(v["throttled"]?["count"])), last \(t(v["throttled"]?["lastThrottledAt"])) (\(t(v["throttled"]?["lastReason"])))"
            ]
        ]
        let width = rows.map { $0[0].count }.max() ?? 0
        return rows.map { $0[0].padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0[1] }.joined(separator: "\n")
    }
}
