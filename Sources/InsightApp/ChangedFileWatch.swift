import Locking

/// Reloads what a file or directory holds once it changes: the hash keyring (`KeyringWatch`)
/// and the signing keys (`SigningKeyWatch`), which insightctl rewrites beside a running daemon.
/// Polled on its own queue every `interval` seconds; a change is noticed by its fingerprint, and a
/// reload that throws is logged and leaves what is in use (the next change is tried again).
final class ChangedFileWatch: Sendable {
    private let name: String
    private let interval: Int
    private let fingerprint: @Sendable () -> String?
    private let reload: @Sendable () throws -> Void
    private let failure: String
    private let logger: Logger
    /// The fingerprint of what is in use.
    private let inUse: Locked<String?>

    /// `inUse` is the fingerprint of what was loaded at start; `reload` loads, puts in use and
    /// logs the new content; `failure` is the log message when it throws.
    init(
        name: String, interval: Int, inUse: String?, fingerprint: @escaping @Sendable () -> String?, logger: Logger,
        failure: String, reload: @escaping @Sendable () throws -> Void
    ) {
        self.name = name
        self.interval = interval
        self.inUse = Locked(inUse)
        self.fingerprint = fingerprint
        self.logger = logger
        self.failure = failure
        self.reload = reload
    }

    /// The polling's schedule: every interval, the first one interval after its start.
    func periodicJob() -> PeriodicJob {
        PeriodicJob(name, firstAfter: Double(interval), every: Double(interval)) { self.reloadIfChanged() }
    }

    /// Reloads if the fingerprint changed since what is in use was read.
    func reloadIfChanged() {
        let current = fingerprint()
        guard current != inUse.withLock({ $0 }) else { return }
        do {
            try reload()
            inUse.withLock { $0 = current }
        } catch {
            logger.error(failure, [("error", .string("\(error)"))])
        }
    }
}
