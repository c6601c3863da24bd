import Crypto
import Foundation

/// The secret key for identifier hashes, kept in a file outside the database.
public enum HashKeyFile {
    public static let generatedLength = 32

    /// Reads the key at `path`. When the file is missing and `createIfMissing`, writes a new
    /// random key with mode 0600 first (atomically: an interrupted start leaves no short key).
    public static func load(path: String, createIfMissing: Bool) throws -> [UInt8] {
        let manager = FileManager.default
        if !manager.fileExists(atPath: path) {
            guard createIfMissing else { throw AppError("hash key file \(path) does not exist") }
            let temporary = path + ".tmp-\(getpid())"
            let key = SecureRandom.bytes(generatedLength)
            guard manager.createFile(atPath: temporary, contents: Data(key), attributes: [.posixPermissions: 0o600]) else {
                throw AppError("cannot write hash key file \(path): \(String(cString: strerror(errno)))")
            }
            guard rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw AppError("cannot write hash key file \(path): \(reason)")
            }
            return key
        }
        guard let data = manager.contents(atPath: path) else {
            throw AppError("cannot read hash key file \(path): \(String(cString: strerror(errno)))")
        }
        return Array(data)
    }

    /// True when the file can be read by group or others.
    public static func isExposed(path: String) -> Bool {
        guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int else { return false }
        return mode & 0o077 != 0
    }
}

/// A failure of the application layer, with a message for the operator.
public struct AppError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
