import InsightDomain

/// Picks up a rotated keyring: `insightctl hash-keys rotate` rewrites the file, and from the next
/// check on hashes use the new active key while lookups still try the previous ones.
enum KeyringWatch {
    /// A file that cannot be read, or a keyring that shares no key with the store's
    /// (`KeyringAgreement`), leaves the keys in use.
    static func watch(
        _ hashKeys: HashKeys, registry: any HashKeyRegistry, path: String, interval: Int, clock: any Clock,
        logger: Logger
    ) -> ChangedFileWatch {
        ChangedFileWatch(
            name: "insightd.keyring", interval: interval, inUse: KeyringFile.fingerprint(path: path),
            fingerprint: { KeyringFile.fingerprint(path: path) }, logger: logger,
            failure: "cannot reload hash keys; keeping the keys in use"
        ) {
            let keyring = try KeyringFile.keyring(path: path, createIfMissing: false, now: clock.now())
            try register(keyring, in: registry, now: clock.now())
            hashKeys.replace(keyring)
            logger.info(
                "hash keys reloaded",
                [
                    ("activeKeyId", .string(keyring.active.keyId)),
                    ("previousKeys", .number(Double(keyring.previous.count)))
                ])
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
