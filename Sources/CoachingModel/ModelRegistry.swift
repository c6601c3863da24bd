// Foundation only for reading files and listing a directory, at load time; nothing here runs per
// request.
import Crypto
import JSON
import Foundation

/// Why the models directory could not be loaded. `description` names the file and the problem;
/// it carries no model content, so it is safe to log.
public struct ModelLoadError: Error, Sendable, CustomStringConvertible {
    /// The file or directory at fault.
    public var path: String
    /// What is wrong with it.
    public var problem: String
    /// `path: problem`.
    public var description: String { "\(path): \(problem)" }

    /// An error about `path`.
    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }
}

/// The coaching model versions found in a models directory (`INSIGHTD_MODELS_DIR`):
///
///     <directory>/registry.json            {"insightType": "isLikelyBeingCoached", "current": "2.0"}
///     <directory>/<version>/manifest.json  feature order, thresholds, rules, sha256 of the model
///     <directory>/<version>/model.json     the tree ensemble
///
/// Loading is all or nothing: one malformed file, unknown feature or sha256 mismatch refuses the
/// whole directory, so a half-copied deployment never serves. Reload by loading again and
/// swapping the value (it is immutable and Sendable).
public struct ModelRegistry: Sendable {
    /// The directory the versions were loaded from.
    public let directory: String
    /// The version answered when a request names none.
    public let currentVersion: String
    /// Every version found, withdrawn ones included, sorted by version number.
    public let versions: [CoachingModelVersion]
    /// The shadow versions (`INSIGHTD_MODEL_SHADOW`): scored beside every coaching insight,
    /// stored, never answered. Each exists, is not withdrawn and is not the current version.
    public let shadows: [CoachingModelVersion]

    /// The most shadow versions: an evaluation keeps them in the insight slots its (at most 4)
    /// requested insights leave free.
    public static let maxShadows = 4

    /// The highest-numbered version that is not withdrawn.
    public var newestVersion: String {
        versions.last(where: { !$0.withdrawn })?.version ?? currentVersion
    }

    /// The version named `version`, or the current one for nil; nil if there is no such version.
    /// A withdrawn version is returned (with `withdrawn == true`) so the caller can tell
    /// "withdrawn" from "unknown"; both answer `insightVersionUnavailable`.
    public func model(version: String?) -> CoachingModelVersion? {
        let wanted = version ?? currentVersion
        return versions.first { $0.version == wanted }
    }

    /// Loads every `<version>/` directory under `directory`. The current version is `current`
    /// when given (operator configuration), else registry.json's `current`, else the newest
    /// version not withdrawn; it must exist and not be withdrawn. Each of `shadow` (at most
    /// `maxShadows`, no repeats) must exist, not be withdrawn and not be the current version.
    public static func load(directory: String, current: String? = nil, shadow: [String] = [])
        throws(ModelLoadError) -> ModelRegistry
    {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ModelLoadError(path: directory, problem: "models directory does not exist")
        }
        let entries: [String]
        do {
            entries = try fm.contentsOfDirectory(atPath: directory)
        } catch {
            throw ModelLoadError(path: directory, problem: "cannot list the models directory")
        }

        var loaded: [CoachingModelVersion] = []
        for entry in entries.sorted() where isVersionString(entry) {
            let path = join(directory, entry)
            var entryIsDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &entryIsDirectory),
                entryIsDirectory.boolValue
            else { continue }
            loaded.append(try loadVersion(directory: path, name: entry))
        }
        guard !loaded.isEmpty else {
            throw ModelLoadError(path: directory, problem: "no model versions (no <version>/manifest.json)")
        }
        loaded.sort { compareVersions($0.version, $1.version) }

        var chosen = current
        let registryPath = join(directory, "registry.json")
        if chosen == nil, fm.fileExists(atPath: registryPath) {
            let json = try readJSON(registryPath)
            guard let object = json.objectValue else {
                throw ModelLoadError(path: registryPath, problem: "is not a JSON object")
            }
            if let type = object["insightType"], type.stringValue != "isLikelyBeingCoached" {
                throw ModelLoadError(path: registryPath, problem: "insightType is not \"isLikelyBeingCoached\"")
            }
            guard let named = object["current"]?.stringValue else {
                throw ModelLoadError(path: registryPath, problem: "lacks a \"current\" version string")
            }
            chosen = named
        }
        let resolved = chosen ?? loaded.last(where: { !$0.withdrawn })?.version
        guard let resolved else {
            throw ModelLoadError(path: directory, problem: "every model version is withdrawn")
        }
        guard let model = loaded.first(where: { $0.version == resolved }) else {
            throw ModelLoadError(
                path: directory,
                problem: "current version \(resolved) is not among the versions found (\(loaded.map(\.version).joined(separator: ", ")))")
        }
        guard !model.withdrawn else {
            throw ModelLoadError(
                path: join(directory, resolved),
                problem: "current version \(resolved) is withdrawn")
        }
        guard shadow.count <= maxShadows else {
            throw ModelLoadError(path: directory, problem: "at most \(maxShadows) shadow versions, \(shadow.count) given")
        }
        var shadows: [CoachingModelVersion] = []
        for name in shadow {
            guard let version = loaded.first(where: { $0.version == name }) else {
                throw ModelLoadError(
                    path: directory,
                    problem: "shadow version \(name) is not among the versions found (\(loaded.map(\.version).joined(separator: ", ")))")
            }
            guard !version.withdrawn else {
                throw ModelLoadError(path: join(directory, name), problem: "shadow version \(name) is withdrawn")
            }
            guard name != resolved else {
                throw ModelLoadError(path: directory, problem: "shadow version \(name) is the current version")
            }
            guard !shadows.contains(where: { $0.version == name }) else {
                throw ModelLoadError(path: directory, problem: "shadow version \(name) is named twice")
            }
            shadows.append(version)
        }
        return ModelRegistry(directory: directory, currentVersion: resolved, versions: loaded, shadows: shadows)
    }

    private static func loadVersion(directory: String, name: String)
        throws(ModelLoadError) -> CoachingModelVersion
    {
        let manifestPath = join(directory, "manifest.json")
        guard FileManager.default.fileExists(atPath: manifestPath) else {
            throw ModelLoadError(path: manifestPath, problem: "missing")
        }
        func bad(_ problem: String) -> ModelLoadError { ModelLoadError(path: manifestPath, problem: problem) }

        guard let m = try readJSON(manifestPath).objectValue else { throw bad("is not a JSON object") }
        guard m["insightType"]?.stringValue == "isLikelyBeingCoached" else {
            throw bad("insightType is not \"isLikelyBeingCoached\"")
        }
        guard m["schemaVersion"]?.intValue == 1 else { throw bad("schemaVersion is not 1") }
        guard let version = m["version"]?.stringValue, version == name else {
            throw bad("version does not match its directory name \(name)")
        }
        let withdrawn: Bool
        switch m["status"]?.stringValue {
        case "active": withdrawn = false
        case "withdrawn": withdrawn = true
        default: throw bad("status is not \"active\" or \"withdrawn\"")
        }

        guard let modelInfo = m["model"]?.objectValue,
            let file = modelInfo["file"]?.stringValue,
            !file.isEmpty, !file.contains("/"), file != "..", file != "."
        else { throw bad("model.file is not a plain file name") }
        guard let expected = modelInfo["sha256"]?.stringValue, expected.count == 64,
            expected.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { throw bad("model.sha256 is not 64 lowercase hex digits") }

        guard let featureList = m["features"]?.arrayValue, !featureList.isEmpty else {
            throw bad("features is not a non-empty list")
        }
        var inputs: [Feature] = []
        for (k, item) in featureList.enumerated() {
            guard let featureName = item.stringValue, let feature = Feature(name: featureName) else {
                throw bad("features[\(k)] is not a known feature name")
            }
            guard !inputs.contains(feature) else { throw bad("features lists \(featureName) twice") }
            inputs.append(feature)
        }

        guard let thresholdTable = m["thresholds"]?.objectValue else { throw bad("thresholds is missing") }
        let thresholds = try categoryThresholds(thresholdTable, path: "thresholds", bad)
        // Optional: thresholds of their own for the platforms that need them (web).
        var platformThresholds: [String: [String: CoachingThresholds]] = [:]
        if let platforms = m["platformThresholds"] {
            guard let table = platforms.objectValue else { throw bad("platformThresholds is not an object") }
            for (platform, entry) in table.members {
                guard CoachingModelVersion.platforms.contains(platform) else {
                    throw bad("platformThresholds names an unknown platform \(platform)")
                }
                guard let categories = entry.objectValue else { throw bad("platformThresholds.\(platform) is not an object") }
                platformThresholds[platform] = try categoryThresholds(categories, path: "platformThresholds.\(platform)", bad)
            }
        }

        guard let rule = m["evidenceRule"]?.objectValue,
            let minActions = rule["minUserActions"]?.numberValue, minActions >= 0,
            let minSeconds = rule["minSessionSeconds"]?.numberValue, minSeconds >= 0,
            let signalList = rule["deviceSignals"]?.arrayValue
        else { throw bad("evidenceRule lacks minUserActions, minSessionSeconds or deviceSignals") }
        var signals: [Feature] = []
        for item in signalList {
            guard let signalName = item.stringValue, let feature = Feature(name: signalName),
                feature.domain.isFlag
            else { throw bad("evidenceRule.deviceSignals must name flag features") }
            signals.append(feature)
        }

        guard let reasonRule = m["reasons"]?.objectValue,
            let maxReasons = reasonRule["maxReasons"]?.intValue, maxReasons >= 1,
            let minContribution = reasonRule["minContribution"]?.numberValue
        else { throw bad("reasons lacks maxReasons or minContribution") }

        let reference = try scoreReference(m["scoreReference"], bad)

        // The model file: sha256 first, so a tampered file is named as such, then its content.
        let modelPath = join(directory, file)
        let bytes = try readBytes(modelPath)
        let actual = SHA256.hexDigest(bytes)
        guard actual == expected else {
            throw ModelLoadError(
                path: modelPath,
                problem: "sha256 \(actual) does not match \(expected) in \(manifestPath); refusing a modified or corrupt model")
        }
        let ensemble: TreeEnsemble
        do {
            ensemble = try TreeEnsemble(json: try JSONParser.parse(bytes, limits: .trusted))
        } catch let error as JSONParseError {
            throw ModelLoadError(path: modelPath, problem: "invalid JSON: \(error)")
        } catch let error as TreeEnsemble.FormatError {
            throw ModelLoadError(path: modelPath, problem: "malformed model: \(error.message)")
        } catch {
            throw ModelLoadError(path: modelPath, problem: "malformed model")
        }
        guard ensemble.featureNames == inputs.map(\.name) else {
            throw ModelLoadError(
                path: modelPath,
                problem: "featureNames differ from the manifest's features")
        }
        return CoachingModelVersion(
            version: version, withdrawn: withdrawn, inputs: inputs, ensemble: ensemble,
            thresholds: thresholds,
            evidence: EvidenceRule(
                minUserActions: minActions, minSessionSeconds: minSeconds,
                deviceSignals: signals),
            maxReasons: maxReasons, minContribution: minContribution, modelSHA256: actual, reference: reference,
            platformThresholds: platformThresholds)
    }

    /// A table of thresholds by category at `path`: every category, each `medium.raw` and
    /// `high.raw` numbers, high not below medium, no other name.
    private static func categoryThresholds(_ table: JSONObject, path: String, _ bad: (String) -> ModelLoadError)
        throws(ModelLoadError) -> [String: CoachingThresholds]
    {
        var thresholds: [String: CoachingThresholds] = [:]
        for category in CoachingModelVersion.categories {
            guard let entry = table[category]?.objectValue,
                let medium = entry["medium"]?.objectValue?["raw"]?.numberValue,
                let high = entry["high"]?.objectValue?["raw"]?.numberValue
            else { throw bad("\(path).\(category) lacks medium.raw and high.raw numbers") }
            guard high >= medium else { throw bad("\(path).\(category): high is below medium") }
            thresholds[category] = CoachingThresholds(medium: medium, high: high)
        }
        for category in table.keys where !CoachingModelVersion.categories.contains(category) {
            throw bad("\(path) names an unknown category \(category)")
        }
        return thresholds
    }

    /// The manifest's optional `scoreReference`: `{"scale": "raw", "bins": {category: {"edges":
    /// [...], "shares": [...]}}}`, edges strictly increasing finite numbers, one more share than
    /// edges, shares in [0, 1] adding up to 1 (within rounding). Absent: nil, no drift figure.
    private static func scoreReference(_ value: JSONValue?, _ bad: (String) -> ModelLoadError)
        throws(ModelLoadError) -> ScoreReference?
    {
        guard let value else { return nil }
        guard let object = value.objectValue, object["scale"]?.stringValue == "raw",
            let table = object["bins"]?.objectValue
        else { throw bad("scoreReference lacks scale \"raw\" and a bins object") }
        var bins: [String: ScoreReference.Bins] = [:]
        for (category, entry) in table.members {
            guard CoachingModelVersion.categories.contains(category) else {
                throw bad("scoreReference names an unknown category \(category)")
            }
            guard let edgeList = entry.objectValue?["edges"]?.arrayValue,
                let shareList = entry.objectValue?["shares"]?.arrayValue
            else { throw bad("scoreReference.\(category) lacks edges and shares lists") }
            let edges = edgeList.compactMap(\.numberValue)
            guard edges.count == edgeList.count, edges.allSatisfy(\.isFinite),
                zip(edges, edges.dropFirst()).allSatisfy({ $0 < $1 })
            else { throw bad("scoreReference.\(category).edges are not strictly increasing numbers") }
            func valid(_ list: [JSONValue]) -> [Double]? {
                let shares = list.compactMap(\.numberValue)
                guard shares.count == list.count, shares.count == edges.count + 1, shares.count <= ScoreReference.maxBins,
                    shares.allSatisfy({ $0 >= 0 && $0 <= 1 }), abs(shares.reduce(0, +) - 1) <= 0.001
                else { return nil }
                return shares
            }
            guard let shares = valid(shareList) else {
                throw bad(
                    "scoreReference.\(category).shares are not one more than the edges (at most \(ScoreReference.maxBins)), each in [0, 1], adding up to 1"
                )
            }
            // Optional: the same bins' shares over one platform's own held-out sessions.
            var platformShares: [String: [Double]] = [:]
            if let value = entry.objectValue?["platformShares"] {
                guard let table = value.objectValue else { throw bad("scoreReference.\(category).platformShares is not an object") }
                for (platform, list) in table.members {
                    guard CoachingModelVersion.platforms.contains(platform), let list = list.arrayValue, let shares = valid(list) else {
                        throw bad(
                            "scoreReference.\(category).platformShares.\(platform) are not shares of the edges' bins for a known platform")
                    }
                    platformShares[platform] = shares
                }
            }
            bins[category] = ScoreReference.Bins(edges: edges, shares: shares, platformShares: platformShares)
        }
        return ScoreReference(bins: bins)
    }

    static func readBytes(_ path: String) throws(ModelLoadError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelLoadError(path: path, problem: "cannot be read")
        }
        return [UInt8](data)
    }

    static func readJSON(_ path: String) throws(ModelLoadError) -> JSONValue {
        let bytes = try readBytes(path)
        do {
            return try JSONParser.parse(bytes, limits: .trusted)
        } catch {
            throw ModelLoadError(path: path, problem: "invalid JSON: \(error)")
        }
    }

    private static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// Whether `s` is a version's name: digits separated by single dots ("1", "1.0", "2.10").
    public static func isVersion(_ s: String) -> Bool { isVersionString(s) }

    /// "1", "1.0", "2.10": digits separated by single dots.
    static func isVersionString(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return !parts.isEmpty
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 9 && part.utf8.allSatisfy { (0x30...0x39).contains($0) }
            }
    }

    /// Numeric, component by component: 1.0 < 2.0 < 10.0, and 2 < 2.0.
    static func compareVersions(_ a: String, _ b: String) -> Bool {
        let x = a.split(separator: ".").map { Int($0) ?? 0 }
        let y = b.split(separator: ".").map { Int($0) ?? 0 }
        for (p, q) in zip(x, y) where p != q { return p < q }
        return x.count < y.count
    }
}

extension Feature.Domain {
    var isFlag: Bool {
        if case .flag = self { return true }
        return false
    }
}
