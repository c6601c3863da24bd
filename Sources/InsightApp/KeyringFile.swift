import Crypto
import Foundation
import InsightDomain

/// The file of identifier hash keys, kept outside the database. Two forms are read:
/// a keyring (text: a header line, then `key <createdAtMs> <hex>` per key, oldest first, the
/// last active), or raw bytes holding one key (what a mounted secret usually is).
/// Writes are atomic and private (`PrivateFile`: created 0600, synced, renamed).
public enum KeyringFile {
    public static let header = "insightd-keyring 1"
    public static let generatedLength = 32

    /// One key of the keyring.
    public struct Entry: Sendable, Equatable {
        public let key: [UInt8]
        public let createdAt: Milliseconds
        /// The public name stored beside every hash the key makes.
        public var keyId: String { (try? SubjectHasher(key: key).keyId) ?? "invalid" }
    }

    /// The keys in `path`, oldest first. A missing file is created with one new key when
    /// `createIfMissing`.
    public static func load(path: String, createIfMissing: Bool, now: Milliseconds) throws -> [Entry] {
        guard FileManager.default.fileExists(atPath: path) else {
            guard createIfMissing else { throw AppError("hash key file \(path) does not exist") }
            let entries = [Entry(key: SecureRandom.bytes(generatedLength), createdAt: now)]
            try write(entries, to: path)
            return entries
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AppError("cannot read hash key file \(path): \(String(cString: strerror(errno)))")
        }
        let bytes = Array(data)
        guard bytes.starts(with: Array((header + "\n").utf8)) else {
            return [Entry(key: bytes, createdAt: 0)]
        }
        var entries: [Entry] = []
        for (number, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n").enumerated().dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == "key", let created = Milliseconds(fields[1]),
                let key = Hex.decode(String(fields[2]))
            else {
                throw AppError("hash key file \(path): line \(number + 1) is not 'key <createdAtMs> <hex>'")
            }
            entries.append(Entry(key: key, createdAt: created))
        }
        guard !entries.isEmpty else { throw AppError("hash key file \(path) holds no key") }
        return entries
    }

    /// The keyring of `path` as the daemon uses it.
    /// The keyring the daemon hashes with, at start and at every reload; refuses a file others
    /// can read (`refuseIfExposed`).
    public static func keyring(path: String, createIfMissing: Bool, now: Milliseconds) throws -> HashKeyring {
        let keyring = try HashKeyring(keys: load(path: path, createIfMissing: createIfMissing, now: now).map(\.key))
        try refuseIfExposed(path, what: "hash key file")
        return keyring
    }

    /// Writes `entries` (oldest first) as a keyring, atomically, mode 0600.
    public static func write(_ entries: [Entry], to path: String) throws {
        var text = header + "\n"
        for entry in entries { text += "key \(entry.createdAt) \(Hex.encode(entry.key))\n" }
        do { try PrivateFile.write(Array(text.utf8), to: path) } catch {
            throw AppError("hash key file: \(error)")
        }
    }

    /// Adds a new random key and makes it active; the previous keys stay for lookups.
    @discardableResult
    public static func rotate(path: String, now: Milliseconds) throws -> Entry {
        var entries = try load(path: path, createIfMissing: false, now: now)
        let entry = Entry(key: SecureRandom.bytes(generatedLength), createdAt: now)
        entries.append(entry)
        try write(entries, to: path)
        return entry
    }

    /// Removes a previous key; the active key cannot be retired.
    public static func retire(keyId: String, path: String, now: Milliseconds) throws {
        var entries = try load(path: path, createIfMissing: false, now: now)
        guard let index = entries.firstIndex(where: { $0.keyId == keyId }) else {
            throw AppError("no key \(keyId) in \(path)")
        }
        guard index != entries.count - 1 else { throw AppError("key \(keyId) is the active key; rotate first") }
        entries.remove(at: index)
        try write(entries, to: path)
    }

    /// Refuses a key file that others can read or write, or that a group other than the
    /// daemon's own can: at start, at every reload and in --check-config alike, so a key made
    /// readable while the daemon runs is not taken up. A file readable by the daemon's own group
    /// passes: Kubernetes mounts a Secret 0440 with the pod's fsGroup, the group the daemon runs as.
    /// The one check of every key file: the hash keys, the signing keys, the TLS private key
    /// (`Settings.refuseExposedTLSKey`) and insightctl's `--key-file`.
    public static func refuseIfExposed(_ path: String, what: String) throws {
        // Kubernetes mounts Secrets as symlinks: judge the file they point to.
        var info = stat()
        guard stat(path, &info) == 0 else { return }  // reading it has failed or will fail on its own
        if info.st_mode & 0o007 != 0 {
            throw AppError("\(what) \(path) is readable by other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        if info.st_mode & 0o070 != 0 && info.st_gid != getegid() {
            throw AppError(
                "\(what) \(path) is readable by its group, which is not insightd's (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it"
            )
        }
    }

    /// A cheap fingerprint of the file (modification time and size), to notice a rotation.
    static func fingerprint(path: String) -> String? {
        // A rotated Kubernetes Secret swaps the symlink's target: include the resolved path.
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: target) else { return nil }
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return "\(target)/\(modified)/\(attributes[.size] as? Int ?? -1)"
    }
}

/// A failure of the application layer, with a message for the operator.
public struct AppError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
