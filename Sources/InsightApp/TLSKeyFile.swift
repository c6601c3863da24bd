extension Settings {
    /// Refuses a TLS private key (`INSIGHTD_TLS_KEY`) that other users, or a group other than
    /// insightd's, can read: the same rule as the hash and signing keys
    /// (`KeyringFile.refuseIfExposed`), at start, at every reload (SIGHUP) and in --check-config,
    /// so a key made readable while the daemon runs is not taken up.
    public func refuseExposedTLSKey() throws {
        guard let tlsPrivateKey else { return }
        try KeyringFile.refuseIfExposed(tlsPrivateKey, what: "TLS private key file (INSIGHTD_TLS_KEY)")
    }
}
