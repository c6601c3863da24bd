import Foundation

/// Files only insightd's user may read (the hash keyring, database backups). Each is created
/// with mode 0600 by `open(O_CREAT | O_EXCL)` — never created readable and narrowed afterwards,
/// which leaves a window in which another user can open it — and reaches its final name only
/// once written and synced, by a rename, so a crash leaves the old file or the new one whole.
public enum PrivateFile {
    /// Writes `bytes` to `path` atomically, replacing any file there.
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let temporary = try createTemporary(beside: path)
        do {
            try withDescriptor(temporary, flags: O_WRONLY) { fd in
                var written = 0
                while written < bytes.count {
                    let n = bytes[written...].withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw failure("cannot write", path) }
                    written += n
                }
                guard fsync(fd) == 0 else { throw failure("cannot sync", path) }
            }
            guard rename(temporary, path) == 0 else { throw failure("cannot write", path) }
        } catch {
            unlink(temporary)
            throw error
        }
        syncDirectory(of: path)
    }

    /// Fills a new private file through `fill(temporaryPath)`, syncs it and gives it the name
    /// `path`, which must not exist (it is never replaced, even by a race).
    public static func create(_ path: String, fill: (String) throws -> Void) throws {
        guard !FileManager.default.fileExists(atPath: path) else { throw AppError("\(path) exists; choose a new file") }
        let temporary = try createTemporary(beside: path)
        do {
            try fill(temporary)
            try withDescriptor(temporary, flags: O_RDONLY) { fd in
                guard fsync(fd) == 0 else { throw failure("cannot sync", path) }
            }
            // link(2) fails with EEXIST where rename(2) would replace a file created meanwhile.
            guard link(temporary, path) == 0 else {
                throw errno == EEXIST ? AppError("\(path) exists; choose a new file") : failure("cannot create", path)
            }
        } catch {
            unlink(temporary)
            throw error
        }
        unlink(temporary)
        syncDirectory(of: path)
    }

    /// An empty file beside `path`, mode 0600, created by this call and no other.
    private static func createTemporary(beside path: String) throws -> String {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("cannot create", temporary) }
        // The mode above is narrowed by the umask only; make it exactly 0600 whatever the umask.
        let changed = fchmod(fd, 0o600)
        close(fd)
        guard changed == 0 else {
            unlink(temporary)
            throw failure("cannot create", temporary)
        }
        return temporary
    }

    private static func withDescriptor<T>(_ path: String, flags: Int32, _ body: (Int32) throws -> T) throws -> T {
        let fd = open(path, flags | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot open", path) }
        defer { close(fd) }
        return try body(fd)
    }

    /// Makes the rename or link durable: the directory entry is data of the directory.
    private static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    private static func failure(_ what: String, _ path: String) -> AppError {
        AppError("\(what) \(path): \(String(cString: strerror(errno)))")
    }
}
