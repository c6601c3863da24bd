import Foundation
import InsightAPI
import InsightApp
import InsightDomain

/// `insightctl policy test CASES [--policy FILE]`: replays a JSON-lines file of decision cases
/// (`DecisionCase`) through a policy and prints each case's action and reasons, for reviewing a
/// policy change before it ships (docs/operations.md). Exits 1 when a case's answer differs
/// from what it expects.
enum PolicyTest: CommandGroup {
    static let policy = Option("policy", "FILE", "the policy to replay them through (default: the built-in one)")

    static let commands = [
        Command(
            "policy", "test", operands: [Operand("CASES", "a JSON-lines file of decision cases (docs/operations.md)")],
            options: [policy],
            summary: "replay a JSON-lines file of decision cases through a policy (the built-in default without --policy) "
                + "and print each answer; status 1 when one differs from what it expects",
            run: { invocation, _ in try run(cases: invocation.operand(0), policy: invocation.value(policy)) })
    ]

    static func run(cases path: String, policy policyPath: String?) throws -> Int32 {
        let report = try replay(cases: path, policy: policyPath)
        for line in report.lines { print(line) }
        return report.mismatches > 0 ? 1 : 0
    }

    /// The lines `run` prints (each case's, then a summary) and how many cases mismatched.
    static func replay(cases path: String, policy policyPath: String?) throws -> (lines: [String], mismatches: Int) {
        let policy = try policyPath.map(DecisionPolicyFile.read) ?? .defaults
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AppError("cannot read the cases \(path): \(String(cString: strerror(errno)))")
        }
        var lines: [String] = [], count = 0, mismatches = 0
        for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" || $0 == "\r" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let testCase: DecisionCase
            do { testCase = try DecisionCase.parse(Array(line.utf8)) } catch {
                throw AppError("\(path): line \(index + 1): \(error.field.map { "\($0): " } ?? "")\(error.detail)")
            }
            let decision = policy.decide(testCase.facts)
            count += 1
            var text = "line \(index + 1): \(decision.action.rawValue)"
            if !decision.reasons.isEmpty { text += " " + decision.reasons.joined(separator: ",") }
            if !testCase.accepts(decision) {
                mismatches += 1
                text += "  MISMATCH: expected \(testCase.expect?.rawValue ?? decision.action.rawValue)"
                if let reasons = testCase.expectReasons {
                    text += " " + (reasons.isEmpty ? "(no reasons)" : reasons.joined(separator: ","))
                }
            }
            lines.append(text)
        }
        lines.append("\(count) cases, policy \(policy.version)" + (mismatches > 0 ? ", \(mismatches) mismatched" : ""))
        return (lines, mismatches)
    }
}
