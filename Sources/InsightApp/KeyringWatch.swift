import InsightDomain
import Locking

/// Picks up a rotated keyring: `insightctl hash-keys rotate` rewrites the file, and from the next
/// check on hashes use the new active key while lookups still try the previous ones. Polled on
/// its own queue every `INSIGHTD_COMPLIANCE_REFRESH` seconds.
final class KeyringWatch: Sendable {
    private let hashKeys: HashKeys
    private let registry: any HashKeyRegistry
    private let path: String
    private let interval: Int
    private let clock: any Clock
    private let logger: Logger
    /// The file as last read.
    private let fingerprint: Locked<String?>
    private let job = Locked<PeriodicJob?>(nil)

    init(hashKeys: HashKeys, registry: any HashKeyRegistry, path: String, fingerprint: String?, interval: Int,
         clock: any Clock, logger: Logger) {
        self.hashKeys = hashKeys
        self.registry = registry
        self.path = path
        self.fingerprint = Locked(fingerprint)
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    func start() {
        let interval = Double(self.interval)
        job.withLock { $0 = PeriodicJob("insightd.keyring", firstAfter: interval, every: interval) { [weak self] in
            self?.reloadIfChanged()
        } }
    }

    func stop() { job.withLock { $0?.stop(); $0 = nil } }

    /// Reads the file again if it changed since it was last read; a file that cannot be read, or
    /// a keyring that shares no key with the store's (`KeyringAgreement`), leaves the keys in use.
    func reloadIfChanged() {
        let current = KeyringFile.fingerprint(path: path)
        guard current != fingerprint.withLock({ $0 }) else { return }
        do {
            let keyring = try KeyringFile.keyring(path: path, createIfMissing: false, now: clock.now())
            try Self.register(keyring, in: registry, now: clock.now())
            hashKeys.replace(keyring)
            fingerprint.withLock { $0 = current }
            logger.info("hash keys reloaded", [("activeKeyId", .string(keyring.active.keyId)),
                                               ("previousKeys", .number(Double(keyring.previous.count)))])
        } catch {
            logger.error("cannot reload hash keys; keeping the keys in use", [("error", .string("\(error)"))])
        }
    }

    /// Registers `keyring`'s new key ids in the store, or throws when it shares no key with the
    /// store's (then it must not be used).
    static func register(_ keyring: HashKeyring, in registry: any HashKeyRegistry, now: Milliseconds) throws {
        do {
            try registry.reconcile(now: now) { registered in
                try KeyringAgreement.keysToRegister(keyring, registered: registered)
            }
        } catch let mismatch as KeyringMismatch {
            throw AppError(mismatch.description)
        }
    }
}
