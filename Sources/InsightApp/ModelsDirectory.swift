import CoachingModel
import Foundation
import JSON

/// The models directory as `insightctl models` changes it: which version is current
/// (registry.json) and which are withdrawn (each manifest's `status`). Every change is checked by
/// loading the whole directory as the daemon would, before and after it is written (a change the
/// daemon would refuse is undone), and each file is replaced atomically, so that a daemon reloading
/// meanwhile reads the old file or the new one. The daemon serves a change on its next reload.
public enum ModelsDirectory {
    /// The directory's versions as the daemon would load them (`current` overriding registry.json,
    /// as INSIGHTD_MODEL_CURRENT does).
    public static func load(_ directory: String, current: String? = nil, shadow: [String] = []) throws -> ModelRegistry {
        do { return try ModelRegistry.load(directory: directory, current: current, shadow: shadow) } catch { throw AppError("\(error)") }
    }

    /// Makes `version` current in registry.json; it must exist and not be withdrawn.
    public static func setCurrent(_ version: String, in directory: String) throws {
        let registry = try load(directory)
        guard let model = registry.model(version: version), model.version == version else {
            throw AppError(
                "no model version \(version) in \(directory) (versions: \(registry.versions.map(\.version).joined(separator: ", ")))")
        }
        guard !model.withdrawn else { throw AppError("model version \(version) is withdrawn: it cannot be current") }
        let path = directory + "/registry.json"
        var object = (try? read(path))?.objectValue ?? ["insightType": .string("isLikelyBeingCoached")]
        object = JSONObject(object.members.filter { $0.key != "current" } + [(key: "current", value: .string(version))])
        try replace(path, with: JSONWriter.string(.object(object)) + "\n", checking: directory)
    }

    /// Marks `version` withdrawn in its manifest: requests naming it answer
    /// `insightVersionUnavailable`. The current version cannot be withdrawn (make another current first).
    public static func withdraw(_ version: String, in directory: String) throws {
        let registry = try load(directory)
        guard let model = registry.versions.first(where: { $0.version == version }) else {
            throw AppError("no model version \(version) in \(directory)")
        }
        guard !model.withdrawn else { return }
        guard registry.currentVersion != version else {
            throw AppError("model version \(version) is current: make another version current first (insightctl models set-current)")
        }
        let path = "\(directory)/\(version)/manifest.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        // The manifest's own text, its status alone changed: the file keeps its layout (the
        // sha256 it holds is the model file's, not its own).
        let active = #""status": "active""#
        guard text.components(separatedBy: active).count == 2 else {
            throw AppError("\(path): expected one \(active)")
        }
        try replace(path, with: text.replacingOccurrences(of: active, with: #""status": "withdrawn""#), checking: directory)
    }

    static func read(_ path: String) throws -> JSONValue {
        guard let data = FileManager.default.contents(atPath: path) else { throw AppError("cannot read \(path)") }
        return try JSONParser.parse(Array(data), limits: .trusted)
    }

    /// Replaces `path` with `text` atomically, then loads `directory`; puts the old file back
    /// if the directory no longer loads.
    static func replace(_ path: String, with text: String, checking directory: String) throws {
        let old = FileManager.default.contents(atPath: path)
        // PrivateFile rather than Foundation's `.atomic`, which on Linux leaves an empty
        // /tmp/TemporaryDirectory.* behind for every write.
        try PrivateFile.write(Array(text.utf8), to: path)
        do {
            _ = try load(directory)
        } catch {
            if let old { try? PrivateFile.write(Array(old), to: path) }
            throw AppError("the change was undone: \(error)")
        }
    }
}
