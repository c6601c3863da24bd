import Crypto
import InsightApp
import InsightDomain
import JSON

/// `insightctl receipts verify`: walks the stored chains of signed receipt heads.
enum ReceiptCommands: CommandGroup {
    static let instance = Option("instance", "NAME", "only this instance's chains")
    static let tenant = Option("tenant", "NAME", "only this tenant's chains")
    static let environment = Option("environment", "NAME", "only the chains of this environment (production or sandbox)")
    static let from = Option(
        "from", "SEQUENCE", "start at this head of each chain walked (needs --instance; default its oldest kept head)")

    static let commands = [
        Command(
            "receipts", "verify", options: [instance, tenant, environment, from, CommonOptions.json], needsStore: true,
            summary:
                "walk every chain of receipt heads (one per instance, tenant and environment, and each instance's chain of heads made before tenants had chains), or those named, from SEQUENCE: signatures, sequence, previous, time, leaves; report the first break (status 1)",
            run: verify)
    ]

    static func verify(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let instance = invocation.value(Self.instance)
        let from =
            try invocation.value(Self.from).map { text -> Int64 in
                guard let v = Int64(text), v >= 0 else { throw AppError("--from must be a sequence: a whole number from 0") }
                return v
            } ?? 0
        if invocation.value(Self.from) != nil && instance == nil { throw AppError("--from needs --instance") }
        let directory = try SigningKeyCommands.directory(context)
        let keys = try SigningKeyDirectory.load(directory: directory, createIfEmpty: false, now: context.now)
        return try verifyReceipts(
            context.store.receiptLog(), keys: keys.map(\.signingKey),
            instance: instance, tenant: invocation.value(Self.tenant), environment: invocation.value(Self.environment),
            from: from, json: invocation.json)
    }

    /// Walks every stored chain (of `instance`, `tenant` and `environment` when given) from
    /// `from`, or from its oldest stored head, and prints what held and the first break of each;
    /// status 1 when one broke.
    static func verifyReceipts(
        _ log: any ReceiptLog, keys: [SigningKey], instance: String?, tenant: String? = nil, environment: String? = nil,
        from: Int64, json: Bool
    ) throws -> Int32 {
        var verifying: [String: Ed25519VerifyingKey] = [:]
        for key in keys { verifying[key.keyId] = Ed25519VerifyingKey(rawRepresentation: key.publicKey) }
        let chains = try log.latestHeads(tenant: tenant, environment: environment).map(\.head.chain)
            .filter { instance == nil || $0.instance == instance }
        var audits: [ReceiptChainAudit] = []
        for chain in chains {
            var audit = ReceiptChainAudit(chain: chain, keys: verifying)
            var next = from
            walk: while true {
                let page = try log.heads(of: chain, from: next, limit: 500, withLeaves: true)
                for head in page {
                    guard audit.check(head) else { break walk }
                    next = head.signed.head.sequence + 1
                }
                if page.count < 500 { break }
            }
            audits.append(audit)
        }
        if json {
            print(
                JSONWriter.string(
                    .array(
                        audits.map { audit in
                            .object([
                                "instance": .string(audit.instance),
                                "tenant": audit.chain.tenant.map { .string($0) } ?? .null,
                                "environment": audit.chain.environment.map { .string($0) } ?? .null,
                                "first": audit.first.map { .number(Double($0.head.sequence)) } ?? .null,
                                "last": audit.last.map { .number(Double($0.head.sequence)) } ?? .null,
                                "heads": .number(Double(audit.heads)), "answers": .number(Double(audit.answers)),
                                "brokenAt": audit.broken.map { .number(Double($0.sequence)) } ?? .null,
                                "reason": audit.broken.map { .string($0.reason) } ?? .null
                            ])
                        })))
        } else if audits.isEmpty {
            print("no receipt heads stored")
        }
        for audit in audits where !json {
            let span = audit.first.map { "heads \($0.head.sequence)-\(audit.last!.head.sequence)" } ?? "no head"
            let start =
                audit.first.map { $0.head.previous == nil ? " from the chain's start" : " (the first names a head before it)" } ?? ""
            print("chain \(audit.chain.name): \(span) verified\(start), \(audit.heads) heads, \(audit.answers) answers")
            if let broken = audit.broken {
                print("chain \(audit.chain.name): head \(broken.sequence) breaks the chain: \(broken.reason)")
            }
        }
        return audits.contains { $0.broken != nil } ? 1 : 0
    }
}
