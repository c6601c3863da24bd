import Crypto
import Foundation
import InsightAPI
import InsightApp
import InsightDomain
import JSON

/// `insightctl callers create | list | show | update`: the callers of the store and their quotas.
enum CallerCommands: CommandGroup {
    static let name = Option("name", "NAME", "the caller's name, unique within its tenant").asRequired
    static let roles = Option("roles", "evaluate,labels,admin", "its roles, separated by commas").asRequired
    static let environment = Option(
        "environment", "production|sandbox",
        "where its keys work: production, or the sandbox (docs/api.md)"
    ).asRequired
    static let rate = Option("rate", "R", "its quota's rate, requests per second (default 50; at most the tenant's ceiling)")
    static let burst = Option("burst", "B", "its quota's burst (default 100; at most the tenant's ceiling)")
    static let trainingCapture = Option(
        "training-capture", "on|off",
        "keep (or stop keeping) the feature vectors of its evaluations for training (docs/privacy.md)")
    static let callerId = Operand("CALLER_ID", "the caller's id (callers list shows it)")

    static let commands = [
        Command(
            "callers", "create",
            options: [
                name, roles, environment, CommonOptions.tenant.with(help: "its tenant (default 'default')"), rate, burst,
                CommonOptions.json
            ],
            needsStore: true,
            summary: "create a caller and print its API key (shown once); names are unique within a tenant",
            run: create),
        Command(
            "callers", "list", options: [CommonOptions.tenant.with(help: "only this tenant's callers"), CommonOptions.json],
            needsStore: true, summary: "list callers (of one tenant)", run: list),
        Command(
            "callers", "show", operands: [callerId], options: [CommonOptions.json], needsStore: true,
            summary: "one caller", run: show),
        Command(
            "callers", "update", operands: [callerId],
            options: [
                rate.with(help: "its quota's rate, requests per second (capped at its tenant's ceiling)"),
                burst.with(help: "its quota's burst (capped at its tenant's ceiling)"), trainingCapture, CommonOptions.json
            ],
            choice: .atLeastOne([rate.name, burst.name, trainingCapture.name]), needsStore: true,
            summary: "change the caller's quota (capped at its tenant's ceiling), and keep (or stop keeping) the "
                + "feature vectors of its evaluations for training (docs/privacy.md)",
            run: update)
    ]

    static func create(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let name = invocation.required(Self.name)
        let roles = try parseRoles(invocation.required(Self.roles))
        guard let callerEnvironment = InsightDomain.Environment(rawValue: invocation.required(Self.environment)) else {
            throw AppError("--environment must be production or sandbox")
        }
        let (rate, burst) = try quota(rate: invocation.value(Self.rate), burst: invocation.value(Self.burst))
        let tenant = invocation.value(CommonOptions.tenant) ?? Tenant.defaultName
        let registry = try context.store.registration()
        try refuseTakenName(name, tenant: tenant, registry)
        let (caller, key) = try registry.create(
            name: name, tenant: tenant, environment: callerEnvironment, roles: roles, rate: rate ?? 50, burst: burst ?? 100,
            now: context.now, callerId: "caller_" + Hex.encode(SecureRandom.bytes(8)))
        if invocation.json {
            print(
                JSONWriter.string(
                    .object([
                        "callerId": .string(caller.callerId), "apiKey": .string(key.token),
                        "keyId": .string(key.keyId), "tenant": .string(caller.tenant)
                    ])))
        } else {
            print(
                "caller \(caller.callerId) (\(caller.name), tenant \(caller.tenant), \(caller.environment.rawValue), roles \(roles.sorted().map(\.rawValue).joined(separator: ",")))"
            )
            print("API key (shown once, store it now): \(key.token)")
        }
        return 0
    }

    static func list(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let callers = try context.store.registration().list(tenant: invocation.value(CommonOptions.tenant))
        if invocation.json {
            print(JSONWriter.string(.array(callers.map(InsightAPIHandler.render))))
        } else {
            printCallers(callers)
        }
        return 0
    }

    static func show(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let callerId = invocation.operand(0)
        guard let caller = try context.store.registration().caller(callerId, tenant: nil) else { throw AppError("no caller \(callerId)") }
        print(invocation.json ? JSONWriter.string(InsightAPIHandler.render(caller)) : table(of: [caller]))
        return 0
    }

    static func update(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let callerId = invocation.operand(0)
        let capture = try invocation.value(trainingCapture).map { text -> Bool in
            guard let on = ["on": true, "off": false][text] else { throw AppError("--training-capture must be on or off") }
            return on
        }
        let (rate, burst) = try quota(rate: invocation.value(Self.rate), burst: invocation.value(Self.burst))
        let registry = try context.store.registration()
        guard let before = try registry.caller(callerId, tenant: nil) else { throw AppError("no caller \(callerId)") }
        var caller = before
        if rate != nil || burst != nil { caller = try registry.setQuota(callerId: callerId, rate: rate, burst: burst) }
        if let capture { caller = try registry.setTrainingCapture(callerId: callerId, capture) }
        if invocation.json {
            print(JSONWriter.string(InsightAPIHandler.render(caller)))
            return 0
        }
        printCallers([caller])
        let changes = Self.changes(from: before, to: caller, asked: (rate, burst))
        print(
            changes.isEmpty
                ? "nothing changed"
                : "changed: \(changes.joined(separator: "; ")) "
                    + "(running daemons apply it within their credential cache time)")
        if capture != nil {
            print(
                caller.trainingCapture
                    ? "training capture is on: the feature vectors of this caller's evaluations are kept (docs/privacy.md); running daemons apply it within their credential cache time"
                    : "training capture is off: no more vectors are kept for this caller (those kept stay until retention or erasure)")
        }
        return 0
    }

    // MARK: What an operator may ask of a caller, checked before the store is asked.

    /// `--roles`: roles separated by commas.
    static func parseRoles(_ text: String) throws -> Set<Role> {
        var roles: Set<Role> = []
        for word in text.split(separator: ",") {
            guard let role = Role(rawValue: word.trimmingCharacters(in: .whitespaces)) else {
                throw AppError("unknown role '\(word)'; roles are evaluate, labels, admin")
            }
            roles.insert(role)
        }
        return roles
    }

    /// `--rate` and `--burst` as a caller's quota may have them (nil: not given).
    static func quota(rate: String?, burst: String?) throws -> (rate: Double?, burst: Int?) {
        let rate = try rate.map { text -> Double in
            guard let v = Double(text), Caller.isValidRate(v) else { throw AppError("--rate must be a positive number") }
            return v
        }
        let burst = try burst.map { text -> Int in
            guard let v = Int(text), Caller.isValidBurst(v) else { throw AppError("--burst must be a whole number of at least 1") }
            return v
        }
        return (rate, burst)
    }

    /// A name is how an operator finds a caller again: two of one tenant may not share one.
    static func refuseTakenName(_ name: String, tenant: String, _ registry: any CallerRegistration) throws {
        if let same = try registry.list(tenant: tenant).first(where: { $0.name == name }) {
            throw AppError("tenant \(tenant) already has a caller named '\(name)' (\(same.callerId)); choose another name")
        }
    }

    // MARK: What was done, said plainly.

    /// What `callers update` changed; a value asked for above the tenant's ceiling says it was
    /// capped (also when it was at the ceiling already).
    static func changes(from before: Caller, to after: Caller, asked: (rate: Double?, burst: Int?)) -> [String] {
        var said: [String] = []
        if let rate = asked.rate, rate != after.rate {
            said.append(
                "rate \(Table.format(before.rate))/s -> \(Table.format(after.rate))/s (\(Table.format(rate))/s asked: the tenant's ceiling)"
            )
        } else if before.rate != after.rate {
            said.append("rate \(Table.format(before.rate))/s -> \(Table.format(after.rate))/s")
        }
        if let burst = asked.burst, burst != after.burst {
            said.append("burst \(before.burst) -> \(after.burst) (\(burst) asked: the tenant's ceiling)")
        } else if before.burst != after.burst {
            said.append("burst \(before.burst) -> \(after.burst)")
        }
        if before.trainingCapture != after.trainingCapture {
            said.append("training capture \(before.trainingCapture ? "on" : "off") -> \(after.trainingCapture ? "on" : "off")")
        }
        return said
    }

    static func printCallers(_ callers: [Caller]) { print(table(of: callers)) }

    static func table(of callers: [Caller]) -> String {
        Table.render(
            ["CALLER", "NAME", "TENANT", "ENVIRONMENT", "ROLES", "RATE", "BURST", "CREATED", "TRAINING CAPTURE"],
            callers.map {
                [
                    $0.callerId, $0.name, $0.tenant, $0.environment.rawValue, $0.roles.sorted().map(\.rawValue).joined(separator: ","),
                    Table.format($0.rate), String($0.burst), Timestamp.format($0.createdAt), $0.trainingCapture ? "on" : "off"
                ]
            })
    }
}
