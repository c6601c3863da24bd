import Dispatch
import InsightAPI
import InsightApp
import InsightDomain
import JSON
import Synchronization

/// `insightctl interventions add | list | retire`: each tenant's catalogue of intervention
/// templates per environment (docs/api.md "Intervention catalogue"), on the store directly.
enum InterventionCommands: CommandGroup {
    static let templateId = Operand("TEMPLATE_ID", "the operator's id of the template (1-64 of A-Z a-z 0-9 . _ -)")
    static let version = Option("version", "N", "the template's version (1-1000000)").asRequired
    static let kind = Option(
        "kind", InterventionTemplate.kinds.map(\.rawValue).joined(separator: "|"), "the intervention the template is shown in"
    ).asRequired
    static let scamTypes = Option(
        "scam-types", "TYPE,…",
        "the scam types it targets, separated by commas: \(ScamType.allCases.map(\.rawValue).joined(separator: ", "))"
    ).asRequired
    static let description = Option(
        "description", "TEXT", "what it says, in at most \(InterventionTemplate.maxDescription) characters on one line (no personal data)"
    ).asRequired
    static let environment = Option("environment", "production|sandbox", "the catalogue's environment (default production)")

    static let commands = [
        Command(
            "interventions", "add", operands: [templateId],
            options: [version, kind, scamTypes, description, CommonOptions.tenant, environment, CommonOptions.json],
            needsStore: true,
            summary: "add a template to the tenant's catalogue; entries never change (a new wording is a new version)", run: add),
        Command(
            "interventions", "list", options: [CommonOptions.tenant, environment, CommonOptions.json], needsStore: true,
            summary: "the tenant's catalogue, retired entries included", run: list),
        Command(
            "interventions", "retire", operands: [templateId], options: [version, CommonOptions.tenant, environment, CommonOptions.json],
            needsStore: true, summary: "retire a template: kept, refused for interventions shown from now on", run: retire)
    ]

    static func add(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let (tenant, environment) = try scope(invocation)
        let reference = try self.reference(invocation)
        guard let kind = InterventionKind(rawValue: invocation.required(Self.kind)), kind != .none else {
            throw AppError("--kind must be one of \(InterventionTemplate.kinds.map(\.rawValue).joined(separator: ", "))")
        }
        var types: [ScamType] = []
        for code in invocation.required(scamTypes).split(separator: ",", omittingEmptySubsequences: false) {
            guard let type = ScamType(rawValue: String(code)), !types.contains(type) else {
                throw AppError("--scam-types takes distinct codes of \(ScamType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            types.append(type)
        }
        let text = invocation.required(description)
        guard InterventionTemplate.isValidDescription(text) else {
            throw AppError("--description must be 1-\(InterventionTemplate.maxDescription) printable characters on one line")
        }
        let template = InterventionTemplate(
            tenant: tenant, environment: environment, id: reference.id, version: reference.version, kind: kind, scamTypes: types,
            description: text, createdAt: context.now)
        let result = try context.store.withInterventions { catalog in try wait { catalog.add(template, completion: $0) } }
        switch result {
        case .added(let stored), .unchanged(let stored):
            if invocation.json {
                print(JSONWriter.string(InsightAPIHandler.render(stored)))
            } else {
                let verb = if case .added = result { "added" } else { "already there, unchanged" }
                print(
                    "template \(stored.id) version \(stored.version) (\(stored.kind.rawValue)) of tenant \(tenant), \(environment.rawValue): \(verb)"
                )
            }
            return 0
        case .conflict(let stored):
            throw AppError(
                "template \(stored.id) version \(stored.version) exists with other content; entries never change: add a new version")
        }
    }

    static func list(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let (tenant, environment) = try scope(invocation)
        let templates = try context.store.withInterventions { try $0.templates(tenant: tenant, environment: environment) }
        if invocation.json {
            print(JSONWriter.string(.array(templates.map(InsightAPIHandler.render))))
        } else {
            Table.print(
                ["TEMPLATE", "VERSION", "KIND", "SCAM TYPES", "CREATED", "RETIRED", "DESCRIPTION"],
                templates.map { t in
                    [
                        t.id, String(t.version), t.kind.rawValue, t.scamTypes.map(\.rawValue).joined(separator: ","),
                        Timestamp.format(t.createdAt), t.retiredAt.map(Timestamp.format) ?? "-", t.description
                    ]
                })
        }
        return 0
    }

    static func retire(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let (tenant, environment) = try scope(invocation)
        let reference = try self.reference(invocation)
        let retired = try context.store.withInterventions { catalog in
            try wait {
                catalog.retire(tenant: tenant, environment: environment, reference: reference, at: context.now, completion: $0)
            }
        }
        guard let retired else {
            throw AppError("tenant \(tenant) has no template \(reference.id) version \(reference.version) in \(environment.rawValue)")
        }
        if invocation.json {
            print(JSONWriter.string(InsightAPIHandler.render(retired)))
        } else {
            print("template \(retired.id) version \(retired.version) retired at \(Timestamp.format(retired.retiredAt ?? context.now))")
        }
        return 0
    }

    static func scope(_ invocation: Invocation) throws -> (String, InsightDomain.Environment) {
        let tenant = invocation.value(CommonOptions.tenant) ?? Tenant.defaultName
        guard Tenant.isValidName(tenant) else { throw AppError("\(tenant) is not a tenant name") }
        guard let environment = InsightDomain.Environment(rawValue: invocation.value(Self.environment) ?? "production") else {
            throw AppError("--environment must be production or sandbox")
        }
        return (tenant, environment)
    }

    static func reference(_ invocation: Invocation) throws -> TemplateReference {
        let id = invocation.operand(0)
        guard TemplateReference.isValidId(id) else { throw AppError("\(id) is not a template id (1-64 of A-Z a-z 0-9 . _ -)") }
        guard let number = Int(invocation.required(version)), TemplateReference.versions.contains(number) else {
            throw AppError("--version must be a whole number from 1 to 1000000")
        }
        return TemplateReference(id: id, version: number)
    }

    /// The result of a store write, waited for (the writer answers within its commit).
    static func wait<T: Sendable>(_ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void) throws -> T {
        let box = Mutex<Result<T, StoreFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        body { result in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch box.withLock({ $0 })! {
        case .success(let value): return value
        case .failure(let failure): throw AppError("the store did not take it: \(failure)")
        }
    }
}
