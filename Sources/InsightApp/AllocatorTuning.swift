import Foundation

/// Starts the daemon under a larger glibc thread cache (`glibc.malloc.tcache_count`).
///
/// Every request allocates and frees some sixty small objects on its loop thread, many of one
/// size. glibc keeps only seven freed chunks of a size per thread (its tcache); the rest go to
/// the shared arena's fast bins, and each allocation of 1 KiB or more (a request body, a response
/// buffer, a SQLite page) first sweeps those bins back together (`malloc_consolidate`), under
/// the arena's lock. With 128 chunks a size the churn stays in the thread cache, and requests
/// neither sweep nor take that lock (figures: docs/performance.md).
///
/// glibc reads tunables only when a program starts, from `GLIBC_TUNABLES`, and offers no call to
/// change this one later; so the binary executes itself once more with the tunable added: same
/// process id, arguments and open files, before any thread or socket exists. An operator who
/// sets `glibc.malloc.tcache_count` in `GLIBC_TUNABLES` keeps that value (7 is glibc's own).
public enum AllocatorTuning {
    static let tunable = "glibc.malloc.tcache_count"
    static let count = 128

    /// `GLIBC_TUNABLES` with the thread-cache size added to the operator's tunables, or nil when
    /// `environment` already sets it (so a re-executed daemon does not execute itself again).
    static func tunables(in environment: [String: String]) -> String? {
        let current = environment["GLIBC_TUNABLES"] ?? ""
        let names = current.split(separator: ":").map { $0.split(separator: "=", maxSplits: 1).first ?? "" }
        if names.contains(where: { $0 == tunable }) { return nil }
        return (current.isEmpty ? "" : current + ":") + "\(tunable)=\(count)"
    }

    /// Executes the running binary again with the tuned `GLIBC_TUNABLES` when `environment`
    /// lacks it; returns only when nothing was needed or the execution failed (the daemon then
    /// runs with glibc's default cache, and says so on standard error).
    public static func reexecuteIfUntuned(environment: [String: String]) {
        guard let value = tunables(in: environment) else { return }
        var tuned = environment
        tuned["GLIBC_TUNABLES"] = value
        let entries = tuned.map { strdup("\($0.key)=\($0.value)") } + [nil]
        // The binary's own path, not /proc/self/exe: the kernel names a process after the file
        // it executes, and `ps`, `top` and systemd would show "exe".
        if let path = executablePath() { execve(path, CommandLine.unsafeArgv, entries) }
        let reason = String(cString: strerror(errno))
        DescriptorOutput.standardError(
            "insightd: cannot re-execute with \(tunable)=\(count) (\(reason)); continuing with glibc's default\n")
        entries.forEach { free($0) }
    }

    /// The running binary's path, as the kernel resolved it when it started.
    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
