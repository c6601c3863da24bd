import Crypto
import Foundation

/// The name of this instance's chain of receipt heads (docs/api.md, "Receipts"): made once per
/// state directory — the host's name and 8 random hex digits, so that two instances never share
/// a chain and an operator sees which host a chain belongs to — and kept in its file
/// `instance`, so that a restarted instance continues its chain. The instance lock makes one
/// daemon at a time its owner.
enum InstanceIdentity {
    static let fileName = "instance"

    /// The identity kept in `directory`, made there when it has none.
    static func load(stateDirectory directory: String) throws -> String {
        let path = (directory as NSString).appendingPathComponent(fileName)
        if let kept = try? String(contentsOfFile: path, encoding: .utf8) {
            let name = kept.trimmingCharacters(in: .whitespacesAndNewlines)
            guard isValid(name) else {
                throw AppError("\(path) does not hold an instance name (1-64 of a-z 0-9 . -); remove it to make a new one")
            }
            return name
        }
        let name = make(host: ProcessInfo.processInfo.hostName)
        do {
            // Private like every state file, whatever the umask.
            try PrivateFile.write(Array((name + "\n").utf8), to: path)
        } catch {
            throw AppError("cannot write \(path): \(error.localizedDescription)")
        }
        return name
    }

    /// `host` lowercased, cut to 40 characters of `a-z 0-9 . -`, then `-` and 8 random hex digits.
    static func make(host: String) -> String {
        let kept = host.lowercased().unicodeScalars.filter {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "-"
        }
        let prefix = String(String.UnicodeScalarView(kept.prefix(40)))
        let suffix = Hex.encode(SecureRandom.bytes(4))
        return prefix.isEmpty ? suffix : prefix + "-" + suffix
    }

    static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "-" }
    }
}
