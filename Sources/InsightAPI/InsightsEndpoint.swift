import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    /// `GET /v1/insights`: the insight types, schema versions and model versions served.
    func insights(_ exchange: Exchange) throws {
        let catalogue = useCases.evaluation.catalogue
        var entry = JSONObject()
        entry.append("type", .string(InsightType.isLikelyBeingCoached.rawValue))
        entry.append("schemaVersions", .array(catalogue.schemaVersions.map { .number(Double($0)) }))
        entry.append("values", .array(InsightValue.allCases.map { .string($0.rawValue) }))
        if let registry = catalogue.models {
            entry.append("newestModelVersion", .string(registry.currentVersion))
            entry.append(
                "modelVersions",
                .array(
                    registry.versions.map { model in
                        .object([
                            "version": .string(model.version),
                            "status": .string(model.withdrawn ? "withdrawn" : "active"),
                            "current": .bool(model.version == registry.currentVersion)
                        ])
                    }))
        } else {
            entry.append("modelVersions", .array([]))
        }
        exchange.send(Self.json(200, .object(["insights": .array([.object(entry)])])))
    }
}
