import Crypto
import Foundation
import InsightDomain

/// The directory of the keys that sign the heads of receipts (docs/operations.md "Receipts"), kept outside the database:
/// one file per key, named `<kid>.key`, written like the hash keyring (`PrivateFile`: created
/// 0600, synced, renamed). A file is text:
///
///     insightd-signing-key 1
///     created <ms>
///     activates <ms>
///     retired <ms> until <ms>        (only once retired)
///     seed <64 hex digits>
///
/// Other names in the directory are ignored (a mounted Kubernetes Secret adds `..data` links).
public enum SigningKeyDirectory {
    public static let header = "insightd-signing-key 1"
    static let suffix = ".key"

    /// One key file's contents.
    public struct Entry: Sendable {
        public let key: Ed25519SigningKey
        let seed: [UInt8]
        public let createdAt: Milliseconds
        public let activatesAt: Milliseconds
        public let retiredAt: Milliseconds?
        public let publishedUntil: Milliseconds?

        public var signingKey: SigningKey {
            SigningKey(
                key: key, createdAt: createdAt, activatesAt: activatesAt, retiredAt: retiredAt,
                publishedUntil: publishedUntil)
        }

        public var keyId: String { signingKey.keyId }

        func retired(at now: Milliseconds, until: Milliseconds) -> Entry {
            Entry(key: key, seed: seed, createdAt: createdAt, activatesAt: activatesAt, retiredAt: now, publishedUntil: until)
        }

        var text: String {
            var text = "\(SigningKeyDirectory.header)\ncreated \(createdAt)\nactivates \(activatesAt)\n"
            if let retiredAt, let publishedUntil { text += "retired \(retiredAt) until \(publishedUntil)\n" }
            return text + "seed \(Hex.encode(seed))\n"
        }
    }

    /// The keys in `directory`, oldest first. When it holds no key and `createIfEmpty`, the
    /// directory (mode 0700) and a first key, signing at once, are created.
    public static func load(directory: String, createIfEmpty: Bool, now: Milliseconds) throws -> [Entry] {
        var entries = try read(directory: directory)
        if entries.isEmpty && createIfEmpty {
            try createDirectory(directory)
            entries = [try add(directory: directory, now: now, activatesAt: now)]
        }
        return entries
    }

    /// The key set the daemon signs with; throws when the directory holds no key that can sign.
    /// Refuses a key file others can read (`KeyringFile.refuseIfExposed`), at start and at every
    /// reload alike.
    public static func keySet(directory: String, createIfEmpty: Bool, now: Milliseconds) throws -> SigningKeySet {
        let entries = try load(directory: directory, createIfEmpty: createIfEmpty, now: now)
        let set: SigningKeySet
        do { set = try SigningKeySet(keys: entries.map(\.signingKey), now: now) } catch {
            throw AppError(
                "signing key directory \(directory) \(error)"
                    + (entries.isEmpty ? "; create one with insightctl signing-keys rotate" : ""))
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names.filter(isKeyFileName).sorted() {
            try KeyringFile.refuseIfExposed((directory as NSString).appendingPathComponent(name), what: "signing key file")
        }
        return set
    }

    /// What `insightd --check-config` says of the directory, without creating anything: keys it
    /// cannot read, none that signs now, or (several instances, which never create one) no key.
    public static func problem(_ settings: Settings, now: Milliseconds) -> String? {
        let directory = settings.resolvedSigningKeyDirectory
        do {
            if try settings.isShared || !read(directory: directory).isEmpty {
                _ = try keySet(directory: directory, createIfEmpty: false, now: now)
            }
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Adds a new key, published at once and signing after `seconds` (at once when no other key
    /// can sign: there is nothing to hand over from).
    @discardableResult
    public static func rotate(directory: String, now: Milliseconds, activateAfter seconds: Int) throws -> Entry {
        let entries = try read(directory: directory)
        try createDirectory(directory)
        let hasCurrent = (try? SigningKeySet(keys: entries.map(\.signingKey), now: now)) != nil
        return try add(directory: directory, now: now, activatesAt: hasCurrent ? now + Milliseconds(seconds) * 1000 : now)
    }

    /// Retires `keyId`: it never signs again and stays published for `retention` seconds.
    /// The current key cannot be retired: rotate first, so that another key signs.
    @discardableResult
    public static func retire(keyId: String, directory: String, now: Milliseconds, retention: Int) throws -> Entry {
        let entries = try read(directory: directory)
        guard let entry = entries.first(where: { $0.keyId == keyId }) else {
            throw AppError("no signing key \(keyId) in \(directory)")
        }
        guard entry.retiredAt == nil else { throw AppError("signing key \(keyId) is already retired") }
        let set = try? SigningKeySet(keys: entries.map(\.signingKey), now: now)
        if set?.current(at: now)?.keyId == keyId {
            throw AppError("signing key \(keyId) is the current key; rotate first, then retire it once its successor signs")
        }
        let retired = entry.retired(at: now, until: now + Milliseconds(retention) * 1000)
        try write(retired, directory: directory)
        return retired
    }

    /// Deletes the files of retired keys whose publication ended (nothing can verify with them
    /// any more, so their private halves have no use); returns their ids.
    @discardableResult
    public static func removeExpired(directory: String, now: Milliseconds) throws -> [String] {
        var removed: [String] = []
        for entry in try read(directory: directory) where !entry.signingKey.isPublished(at: now) {
            guard unlink(path(of: entry.keyId, in: directory)) == 0 else {
                throw AppError("cannot delete \(path(of: entry.keyId, in: directory)): \(String(cString: strerror(errno)))")
            }
            removed.append(entry.keyId)
        }
        return removed
    }

    /// A cheap fingerprint of the directory (each key file's name, resolved target, modification
    /// time and size), to notice a rotation; nil when the directory cannot be listed.
    static func fingerprint(directory: String) -> String? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        return names.filter(isKeyFileName).sorted().map {
            KeyringFile.fingerprint(path: (directory as NSString).appendingPathComponent($0)) ?? "\($0)/unreadable"
        }.joined(separator: "|")
    }

    // MARK: - Files

    private static func isKeyFileName(_ name: String) -> Bool { name.hasSuffix(suffix) && !name.hasPrefix(".") }

    static func path(of keyId: String, in directory: String) -> String {
        (directory as NSString).appendingPathComponent(keyId + suffix)
    }

    private static func read(directory: String) throws -> [Entry] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { throw AppError("signing key directory \(directory) is not a directory") }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw AppError("cannot list signing key directory \(directory): \(String(cString: strerror(errno)))")
        }
        return try names.filter(isKeyFileName).map { name in
            let file = (directory as NSString).appendingPathComponent(name)
            let entry = try parse(file: file)
            guard name == entry.keyId + suffix else {
                throw AppError("signing key file \(file) holds key \(entry.keyId); name it \(entry.keyId)\(suffix)")
            }
            return entry
        }.sorted { $0.createdAt < $1.createdAt }
    }

    private static func parse(file: String) throws -> Entry {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw AppError("cannot read signing key file \(file): \(String(cString: strerror(errno)))")
        }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        func malformed(_ what: String) -> AppError { AppError("signing key file \(file): \(what)") }
        guard lines.first == Substring(header) else { throw malformed("the first line is not '\(header)'") }
        var created: Milliseconds?, activates: Milliseconds?, retired: (Milliseconds, Milliseconds)?, seed: [UInt8]?
        for (number, line) in lines.enumerated().dropFirst() {
            let fields = line.split(separator: " ")
            switch (fields.first, fields.count) {
            case ("created", 2): created = Milliseconds(fields[1])
            case ("activates", 2): activates = Milliseconds(fields[1])
            case ("retired", 4) where fields[2] == "until":
                guard let at = Milliseconds(fields[1]), let until = Milliseconds(fields[3]) else {
                    throw malformed("line \(number + 1) is not 'retired <ms> until <ms>'")
                }
                retired = (at, until)
            case ("seed", 2): seed = Hex.decode(String(fields[1]))
            default: throw malformed("line \(number + 1) is not one of created, activates, retired, seed")
            }
        }
        guard let created, let activates else { throw malformed("'created <ms>' and 'activates <ms>' are required") }
        guard let seed, let key = Ed25519SigningKey(seed: seed) else { throw malformed("'seed' must be 64 hex digits") }
        return Entry(
            key: key, seed: seed, createdAt: created, activatesAt: activates, retiredAt: retired?.0,
            publishedUntil: retired?.1)
    }

    private static func add(directory: String, now: Milliseconds, activatesAt: Milliseconds) throws -> Entry {
        let (key, seed) = Ed25519SigningKey.generate()
        let entry = Entry(key: key, seed: seed, createdAt: now, activatesAt: activatesAt, retiredAt: nil, publishedUntil: nil)
        try write(entry, directory: directory)
        return entry
    }

    private static func write(_ entry: Entry, directory: String) throws {
        do { try PrivateFile.write(Array(entry.text.utf8), to: path(of: entry.keyId, in: directory)) } catch {
            throw AppError("signing key: \(error)")
        }
    }

    /// Creates `directory` with mode 0700 if it is missing (the files in it are 0600 anyway).
    private static func createDirectory(_ directory: String) throws {
        guard !FileManager.default.fileExists(atPath: directory) else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw AppError("cannot create signing key directory \(directory): \(error.localizedDescription)")
        }
    }
}
