import Foundation
import InsightDomain
import InsightServices
import JSON

/// Loads the decision policy (`INSIGHTD_DECISION_POLICY`, else the built-in default) and its
/// shadow (`INSIGHTD_DECISION_POLICY_SHADOW`) into `DecisionPolicies`: at start and on SIGHUP,
/// swapped in together without dropping a request. A file that cannot be read or parsed is an
/// error naming its line, and keeps the policies in use.
struct DecisionPolicyLoader: Sendable {
    let policies: DecisionPolicies
    let file: String?
    let shadowFile: String?
    let logger: Logger

    /// The policies the settings name (what `--check-config` validates).
    static func load(file: String?, shadowFile: String?) throws -> DecisionPolicies.Snapshot {
        DecisionPolicies.Snapshot(
            live: try file.map(DecisionPolicyFile.read) ?? .defaults, shadow: try shadowFile.map(DecisionPolicyFile.read))
    }

    func reload() throws {
        let snapshot = try Self.load(file: file, shadowFile: shadowFile)
        policies.replace(snapshot)
        var fields: [(String, JSONValue)] = [
            ("policyVersion", .string(snapshot.live.version)),
            ("rules", .number(Double(snapshot.live.rules.count)))
        ]
        if let shadow = snapshot.shadow { fields.append(("shadowPolicyVersion", .string(shadow.version))) }
        logger.info("decision policy loaded", fields)
    }
}

/// A decision policy file read from disk (the daemon and `insightctl policy test` read it so).
public enum DecisionPolicyFile {
    /// The policy in the file at `path`; the error names the file, and the line at fault.
    public static func read(_ path: String) throws -> DecisionPolicy {
        // Refused before it is read whole: the size is checked again on what was read.
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > DecisionPolicy.maxBytes {
            throw AppError("decision policy \(path): larger than \(DecisionPolicy.maxBytes) bytes (comment lines included)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AppError("cannot read the decision policy \(path): \(String(cString: strerror(errno)))")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw AppError("decision policy \(path): not UTF-8 text")
        }
        do { return try DecisionPolicy.parse(text) } catch {
            throw AppError("decision policy \(path): \(error)")
        }
    }
}
