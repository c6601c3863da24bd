import InsightDomain

/// Picks up rotated or retired signing keys: `insightctl signing-keys rotate|retire` rewrites
/// the directory, and from the next check on answers are signed with the current key and the
/// JWKS lists the new set. A directory that cannot be read, or holds no key that signs now,
/// leaves the keys in use.
enum SigningKeyWatch {
    static func watch(
        _ keys: SigningKeys, directory: String, interval: Int, clock: any Clock,
        logger: Logger
    ) -> ChangedFileWatch {
        ChangedFileWatch(
            name: "insightd.signing-keys", interval: interval,
            inUse: SigningKeyDirectory.fingerprint(directory: directory),
            fingerprint: { SigningKeyDirectory.fingerprint(directory: directory) }, logger: logger,
            failure: "cannot reload signing keys; keeping the keys in use"
        ) {
            let set = try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: clock.now())
            keys.replace(set)
            logger.info(
                "signing keys reloaded",
                [
                    ("currentKeyId", .string(set.current(at: clock.now())?.keyId ?? "-")),
                    ("keys", .number(Double(set.keys.count)))
                ])
        }
    }
}
