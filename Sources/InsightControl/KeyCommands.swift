import InsightApp
import InsightDomain
import JSON

/// `insightctl keys issue | list | revoke`: the API keys of a caller.
enum KeyCommands: CommandGroup {
    static let caller = Option("caller", "CALLER_ID", "the caller whose keys these are").asRequired

    static let commands = [
        Command(
            "keys", "issue", options: [caller, CommonOptions.json], needsStore: true,
            summary: "issue another key for a caller", run: issue),
        Command(
            "keys", "list", options: [caller, CommonOptions.json], needsStore: true,
            summary: "list a caller's keys (ids and dates)", run: list),
        Command(
            "keys", "revoke", operands: [Operand("KEY_ID|KEY", "the key's id, or the whole key")], needsStore: true,
            summary: "revoke a key", run: revoke)
    ]

    static func issue(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let callerId = invocation.required(caller)
        let key = try context.store.registration().issueKey(callerId: callerId, now: context.now)
        if invocation.json {
            print(JSONWriter.string(.object(["callerId": .string(callerId), "apiKey": .string(key.token), "keyId": .string(key.keyId)])))
        } else {
            print("API key (shown once, store it now): \(key.token)")
        }
        return 0
    }

    static func list(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let keys = try context.store.registration().keys(callerId: invocation.required(caller))
        if invocation.json {
            print(
                JSONWriter.string(
                    .array(
                        keys.map { key in
                            var o: JSONObject = ["keyId": .string(key.keyId), "createdAt": .string(Timestamp.format(key.createdAt))]
                            o.append("revokedAt", key.revokedAt.map { .string(Timestamp.format($0)) } ?? .null)
                            return .object(o)
                        })))
        } else {
            Table.print(
                ["KEY", "CREATED", "REVOKED"],
                keys.map {
                    [$0.keyId, Timestamp.format($0.createdAt), $0.revokedAt.map(Timestamp.format) ?? "-"]
                })
        }
        return 0
    }

    static func revoke(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let keyId = APIKey(token: invocation.operand(0))?.keyId ?? invocation.operand(0)
        try context.store.registration().revokeKey(keyId: keyId, now: context.now)
        print("key \(keyId) revoked; the daemon stops accepting it within its credential cache time")
        return 0
    }
}
