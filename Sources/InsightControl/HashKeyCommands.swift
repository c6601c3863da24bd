import Crypto
import InsightApp
import InsightDomain
import JSON

/// `insightctl hash-keys list | rotate | retire`: the keys identifiers are hashed under
/// (docs/privacy.md), in the hash key file.
enum HashKeyCommands: CommandGroup {
    static let commands = [
        Command(
            "hash-keys", "list", options: [CommonOptions.json],
            summary: "the identifier hash keys (ids and dates, never the keys)", run: list),
        Command("hash-keys", "rotate", summary: "add a new active key; lookups keep trying the old ones", run: rotate),
        Command(
            "hash-keys", "retire", operands: [Operand("KEY_ID", "the key (hash-keys list shows it)")],
            summary: "drop an old key (its hashes stop matching)", run: retire)
    ]

    static func list(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let entries = try KeyringFile.load(path: keyringPath(context), createIfMissing: false, now: context.now)
        let rows = entries.enumerated().reversed().map { index, entry in
            (
                entry.keyId, entry.createdAt == 0 ? "-" : Timestamp.format(entry.createdAt),
                index == entries.count - 1 ? "active" : "previous"
            )
        }
        if invocation.json {
            print(
                JSONWriter.string(
                    .array(
                        rows.map {
                            .object([
                                "keyId": .string($0.0), "createdAt": .string($0.1),
                                "state": .string($0.2)
                            ])
                        })))
        } else {
            Table.print(["KEY", "CREATED", "STATE"], rows.map { [$0.0, $0.1, $0.2] })
        }
        return 0
    }

    static func rotate(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let entry = try KeyringFile.rotate(path: keyringPath(context), now: context.now)
        print("new active key \(entry.keyId); the daemon picks it up within seconds (previous keys still match)")
        return 0
    }

    static func retire(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        try KeyringFile.retire(keyId: invocation.operand(0), path: keyringPath(context), now: context.now)
        print("key \(invocation.operand(0)) retired; hashes made with it no longer match")
        return 0
    }

    /// The hash key file: `$INSIGHTD_HASH_KEY_FILE`, else the daemon's default in the state directory.
    static func keyringPath(_ context: CommandContext) -> String {
        if let file = context.environment["INSIGHTD_HASH_KEY_FILE"], !file.isEmpty { return file }
        var settings = Settings()
        settings.stateDirectory = context.stateDirectory
        return settings.resolvedHashKeyFile
    }
}

/// `insightctl hash VALUE --kind KIND`: the stored hash of an identifier, to find a subject's records.
enum HashCommand: CommandGroup {
    static let kind = Option("kind", "account|device|counterparty", "what the identifier is").asRequired

    static let commands = [
        Command(
            "hash",
            operands: [
                Operand(
                    "VALUE", "the identifier; - reads it from standard input (one line), so that it stays out of the shell's history and ps"
                )
            ],
            options: [kind, CommonOptions.tenant.with(help: "the tenant whose keys hash it (default 'default')")],
            summary: "the stored hash of VALUE in tenant T under each hash key, to find a subject's records",
            run: hash)
    ]

    static func hash(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        guard let kind = IdentifierKind(rawValue: invocation.required(Self.kind)) else {
            throw AppError("--kind must be account, device or counterparty")
        }
        let tenant = invocation.value(CommonOptions.tenant) ?? Tenant.defaultName
        guard Tenant.isValidName(tenant) else { throw AppError("--tenant \(tenant) is not a tenant name") }
        // Each tenant hashes under its own keys: the same person has other hashes in another tenant.
        let keyring = try KeyringFile.keyring(path: HashKeyCommands.keyringPath(context), createIfMissing: false, now: context.now)
            .forTenant(tenant)
        // `-`: the identifier from standard input, never on the command line (ps, history).
        let value = try identifier(invocation.operand(0))
        // Every key's hash: records made before a rotation carry the previous key's.
        for hasher in keyring.all {
            print(
                "\(Hex.encode(hasher.hash(value, kind: kind)))  key \(hasher.keyId)\(hasher.keyId == keyring.active.keyId ? " (active)" : "")"
            )
        }
        return 0
    }

    /// An identifier from the command line, or from standard input when it is `-`.
    static func identifier(_ value: String) throws -> String {
        guard value == "-" else { return value }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw AppError("an identifier was to be read from standard input, which gave none")
        }
        return line
    }
}
