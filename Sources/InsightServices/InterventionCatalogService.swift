import InsightDomain

/// The intervention catalogue as an admin keeps it (docs/api.md "Intervention catalogue"): the
/// entries of the admin's own tenant and environment only; another's are as absent as none.
public struct InterventionCatalogService: Sendable {
    let catalog: any InterventionCatalog
    let clock: any Clock

    public init(catalog: any InterventionCatalog, clock: any Clock) {
        self.catalog = catalog
        self.clock = clock
    }

    /// Every entry of the admin's tenant and environment, retired ones included.
    public func templates(of admin: Caller) throws(Rejection) -> [InterventionTemplate] {
        do { return try catalog.templates(tenant: admin.tenant, environment: admin.environment) } catch {
            throw .unreadable(.interventions)
        }
    }

    /// Adds an entry (already well-formed) to the admin's catalogue; completes with it and
    /// whether it is new (the same entry again is not, and changes nothing).
    public func add(
        _ reference: TemplateReference, kind: InterventionKind, scamTypes: [ScamType], description: String,
        of admin: Caller, resume: @escaping Resume, completion: @escaping Completion<(InterventionTemplate, added: Bool)>
    ) {
        let template = InterventionTemplate(
            tenant: admin.tenant, environment: admin.environment, id: reference.id, version: reference.version, kind: kind,
            scamTypes: scamTypes, description: description, createdAt: clock.now())
        catalog.add(template) { result in
            resume {
                switch result {
                case .success(.added(let stored)): completion(.success((stored, added: true)))
                case .success(.unchanged(let stored)): completion(.success((stored, added: false)))
                case .success(.conflict(let stored)): completion(.failure(.templateConflict(stored)))
                case .failure(let failure): completion(.failure(.store(failure)))
                }
            }
        }
    }

    /// Retires one entry of the admin's catalogue now (kept; refused for interventions shown from
    /// now on); an entry retired before keeps its first time.
    public func retire(
        _ reference: TemplateReference, of admin: Caller, resume: @escaping Resume,
        completion: @escaping Completion<InterventionTemplate>
    ) {
        catalog.retire(tenant: admin.tenant, environment: admin.environment, reference: reference, at: clock.now()) { result in
            resume {
                switch result {
                case .success(let stored?): completion(.success(stored))
                case .success(nil): completion(.failure(.templateNotFound))
                case .failure(let failure): completion(.failure(.store(failure)))
                }
            }
        }
    }
}
