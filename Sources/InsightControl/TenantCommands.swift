import InsightApp
import InsightDomain
import JSON

/// `insightctl tenants list | update`: the tenants and the ceilings of their callers' quotas.
enum TenantCommands: CommandGroup {
    static let maxRate = Option("max-rate", "R|none", "the highest rate any caller of the tenant may have (none: no ceiling)")
    static let maxBurst = Option("max-burst", "B|none", "the highest burst any caller of the tenant may have (none: no ceiling)")

    static let commands = [
        Command(
            "tenants", "list", options: [CommonOptions.json], needsStore: true,
            summary: "list tenants, their callers per environment and ceilings", run: list),
        Command(
            "tenants", "update", operands: [Operand("NAME", "the tenant")], options: [maxRate, maxBurst, CommonOptions.json],
            choice: .atLeastOne([maxRate.name, maxBurst.name]), needsStore: true,
            summary: "the highest rate and burst the tenant's admins may give any of its callers; callers above it are lowered to it now",
            run: update)
    ]

    static func list(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let registry = try context.store.registration()
        let tenants = try registry.tenants().map { ($0, try registry.ceiling(tenant: $0.name)) }
        if invocation.json {
            print(
                JSONWriter.string(
                    .array(
                        tenants.map { tenant, ceiling in
                            .object([
                                "tenant": .string(tenant.name),
                                "callers": .object([
                                    "production": .number(Double(tenant.production)),
                                    "sandbox": .number(Double(tenant.sandbox))
                                ]),
                                "ceiling": render(ceiling)
                            ])
                        })))
        } else {
            Table.print(
                ["TENANT", "PRODUCTION CALLERS", "SANDBOX CALLERS", "MAX RATE", "MAX BURST"],
                tenants.map { tenant, ceiling in
                    [
                        tenant.name, String(tenant.production), String(tenant.sandbox),
                        ceiling.maxRate.map { "\($0)" } ?? "-", ceiling.maxBurst.map(String.init) ?? "-"
                    ]
                })
        }
        return 0
    }

    static func update(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let tenant = invocation.operand(0)
        guard Tenant.isValidName(tenant) else { throw AppError("\(tenant) is not a tenant name") }
        let registry = try context.store.registration()
        var ceiling = try registry.ceiling(tenant: tenant)
        if let text = invocation.value(maxRate) {
            if text == "none" {
                ceiling.maxRate = nil
            } else {
                guard let v = Double(text), Caller.isValidRate(v) else { throw AppError("--max-rate must be a positive number or none") }
                ceiling.maxRate = v
            }
        }
        if let text = invocation.value(maxBurst) {
            if text == "none" {
                ceiling.maxBurst = nil
            } else {
                guard let v = Int(text), Caller.isValidBurst(v) else {
                    throw AppError("--max-burst must be a whole number of at least 1, or none")
                }
                ceiling.maxBurst = v
            }
        }
        let lowered = try registry.setCeiling(ceiling, tenant: tenant)
        if invocation.json {
            print(
                JSONWriter.string(
                    .object([
                        "tenant": .string(tenant), "ceiling": render(ceiling),
                        "callersLowered": .number(Double(lowered))
                    ])))
        } else {
            print(
                "tenant \(tenant): max rate \(ceiling.maxRate.map { "\($0)/s" } ?? "none"), max burst \(ceiling.maxBurst.map(String.init) ?? "none"); "
                    + "\(lowered) caller(s) lowered to it (running daemons apply it within their credential cache time)")
        }
        return 0
    }

    /// A tenant's ceiling as JSON: null for a bound that is not set.
    static func render(_ ceiling: TenantCeiling) -> JSONValue {
        .object([
            "maxRate": ceiling.maxRate.map { .number($0) } ?? .null,
            "maxBurst": ceiling.maxBurst.map { .number(Double($0)) } ?? .null
        ])
    }
}
