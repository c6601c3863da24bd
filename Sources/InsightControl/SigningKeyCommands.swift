import InsightApp
import InsightDomain
import JSON

/// `insightctl signing-keys list | rotate | retire`: the Ed25519 keys that sign the heads of
/// receipts (docs/operations.md, "Signing keys").
enum SigningKeyCommands: CommandGroup {
    static let activateAfter = Option(
        "activate-after", "SECONDS",
        "seconds before it signs, 0 to 86400 (default 0; 300 with INSIGHTD_DATABASE_URL, so that every instance publishes it first)")

    static let commands = [
        Command(
            "signing-keys", "list", options: [CommonOptions.json],
            summary: "the keys that sign the heads of receipts: id, dates, status (never the keys)", run: list),
        Command(
            "signing-keys", "rotate", options: [activateAfter],
            summary:
                "add a key, published at once and signing after SECONDS (default 0; 300 with INSIGHTD_DATABASE_URL); the old one stays published",
            run: rotate),
        Command(
            "signing-keys", "retire", operands: [Operand("KEY_ID", "the key (signing-keys list shows it)")],
            summary: "stop signing with a key; it stays published for $INSIGHTD_SIGNING_KEY_RETENTION seconds (default 30 days)",
            run: retire)
    ]

    /// A new signing key's wait before it signs when several instances share the engines: long
    /// enough for every instance to read it (INSIGHTD_COMPLIANCE_REFRESH) and for a mounted
    /// Secret's update to reach every pod, so every instance's JWKS lists it before any answer
    /// carries it.
    static let sharedActivationDelay = 300

    static func list(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let now = context.now
        let entries = try SigningKeyDirectory.load(directory: directory(context), createIfEmpty: false, now: now)
        // Statuses from the set the daemon would build (an unusable set still lists its keys).
        let keys = entries.map(\.signingKey)
        let set = try? SigningKeySet(keys: keys, now: now)
        func status(_ key: SigningKey) -> String {
            set.map { $0.status(of: key, at: now).rawValue } ?? (key.retiredAt == nil ? "previous" : "retired")
        }
        let rows = keys.reversed().map { key in
            (
                key.keyId, Timestamp.format(key.createdAt), status(key), Timestamp.format(key.activatesAt),
                key.publishedUntil.map(Timestamp.format)
            )
        }
        if invocation.json {
            print(
                JSONWriter.string(
                    .array(
                        rows.map {
                            .object([
                                "keyId": .string($0.0), "createdAt": .string($0.1), "status": .string($0.2),
                                "activatesAt": .string($0.3), "retiredUntil": $0.4.map(JSONValue.string) ?? .null
                            ])
                        })))
        } else {
            Table.print(["KEY", "CREATED", "STATUS", "SIGNS FROM", "RETIRED UNTIL"], rows.map { [$0.0, $0.1, $0.2, $0.3, $0.4 ?? "-"] })
        }
        return 0
    }

    static func rotate(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let directory = try directory(context)
        let defaultDelay = context.environment["INSIGHTD_DATABASE_URL"] == nil ? 0 : sharedActivationDelay
        let delay =
            try invocation.value(activateAfter).map { text -> Int in
                guard let v = Int(text), (0...86_400).contains(v) else {
                    throw AppError("--activate-after must be a whole number of seconds from 0 to 86400")
                }
                return v
            } ?? defaultDelay
        let entry = try SigningKeyDirectory.rotate(directory: directory, now: context.now, activateAfter: delay)
        let signs = entry.activatesAt <= context.now ? "signs from now" : "signs from \(Timestamp.format(entry.activatesAt))"
        print(
            "new signing key \(entry.keyId): published now, \(signs); the daemon picks it up within seconds (the previous key stays published)"
        )
        try reportRemoved(SigningKeyDirectory.removeExpired(directory: directory, now: context.now))
        return 0
    }

    static func retire(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let directory = try directory(context)
        let retention = try context.setting("INSIGHTD_SIGNING_KEY_RETENTION") { $0.signingKeyRetention }
        let entry = try SigningKeyDirectory.retire(
            keyId: invocation.operand(0), directory: directory, now: context.now, retention: retention)
        print(
            "signing key \(entry.keyId) retired: it signs no more and stays published until \(Timestamp.format(entry.publishedUntil ?? context.now))"
        )
        try reportRemoved(SigningKeyDirectory.removeExpired(directory: directory, now: context.now))
        return 0
    }

    static func reportRemoved(_ keyIds: [String]) {
        for keyId in keyIds { print("deleted signing key \(keyId): retired and no longer published") }
    }

    /// The signing key directory: INSIGHTD_SIGNING_KEY_DIR, else `signing-keys` in the state
    /// directory (the embedded mode only: several instances share one directory, which must be named).
    static func directory(_ context: CommandContext) throws -> String {
        if let directory = context.environment["INSIGHTD_SIGNING_KEY_DIR"], !directory.isEmpty { return directory }
        guard context.environment["INSIGHTD_DATABASE_URL"] == nil else {
            throw AppError(
                "INSIGHTD_SIGNING_KEY_DIR: required with INSIGHTD_DATABASE_URL (the directory every instance reads its signing keys from)")
        }
        var settings = Settings()
        settings.stateDirectory = context.stateDirectory
        return settings.resolvedSigningKeyDirectory
    }
}
