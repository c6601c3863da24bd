import InsightDomain
import Locking

/// Picks up rotated or retired signing keys: `insightctl signing-keys rotate|retire` rewrites
/// the directory, and from the next check on answers are signed with the current key and the
/// JWKS lists the new set. Polled on its own queue every `INSIGHTD_COMPLIANCE_REFRESH` seconds,
/// like the hash keyring (`KeyringWatch`).
final class SigningKeyWatch: Sendable {
    private let keys: SigningKeys
    private let directory: String
    private let interval: Int
    private let clock: any Clock
    private let logger: Logger
    /// The directory as last read.
    private let fingerprint: Locked<String?>
    private let job = Locked<PeriodicJob?>(nil)

    init(keys: SigningKeys, directory: String, fingerprint: String?, interval: Int, clock: any Clock, logger: Logger) {
        self.keys = keys
        self.directory = directory
        self.fingerprint = Locked(fingerprint)
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    func start() {
        let interval = Double(self.interval)
        job.withLock { $0 = PeriodicJob("insightd.signing-keys", firstAfter: interval, every: interval) { [weak self] in
            self?.reloadIfChanged()
        } }
    }

    func stop() { job.withLock { $0?.stop(); $0 = nil } }

    /// Reads the directory again if it changed since it was last read; a directory that cannot
    /// be read, or holds no key that signs now, leaves the keys in use.
    func reloadIfChanged() {
        let current = SigningKeyDirectory.fingerprint(directory: directory)
        guard current != fingerprint.withLock({ $0 }) else { return }
        do {
            let set = try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: clock.now())
            keys.replace(set)
            fingerprint.withLock { $0 = current }
            logger.info("signing keys reloaded", [("currentKeyId", .string(set.current(at: clock.now())?.keyId ?? "-")),
                                                  ("keys", .number(Double(set.keys.count)))])
        } catch {
            logger.error("cannot reload signing keys; keeping the keys in use", [("error", .string("\(error)"))])
        }
    }
}
