import Foundation
import Locking

/// One daemon per state directory: an exclusive `flock` on `insightd.lock`, held for the
/// process's life or until `release` (the kernel releases it when the process dies, even by SIGKILL).
public final class InstanceLock: Sendable {
    /// The locked file's descriptor; nil once released.
    private let descriptor: Locked<Int32?>

    /// Takes the lock in `directory`, or explains who holds it.
    public init(directory: String) throws {
        let path = (directory as NSString).appendingPathComponent("insightd.lock")
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AppError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(fd)
            throw AppError(
                "another insightd (pid \(holder?.isEmpty == false ? holder! : "unknown")) is running on the state directory \(directory); stop it first or use another INSIGHTD_STATE_DIR"
            )
        }
        ftruncate(fd, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        descriptor = Locked(fd)
    }

    /// Lets another daemon take the state directory.
    public func release() {
        descriptor.withLock { fd in
            if let open = fd { close(open) }
            fd = nil
        }
    }

    deinit { release() }
}
