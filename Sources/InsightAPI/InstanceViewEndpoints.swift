import InsightDomain
import InsightServices
import JSON
import Telemetry

/// The admin API's views of this instance (role `admin`, the console's Models, Velocity and
/// Health pages): the models it serves, and counts read from the same series `/metrics`
/// exposes — this instance's, since it started — of the admin's own tenant where they are
/// counted per tenant.
extension InsightAPIHandler {
    /// `GET /admin/v1/models`: the versions loaded now, which one is current, which are
    /// withdrawn and which are shadows.
    func adminModels(_ exchange: Exchange) {
        let evaluation = useCases.evaluation
        let registry = evaluation.catalogue.models
        // The versions scored beside the current one on every evaluation (INSIGHTD_MODEL_SHADOW).
        let shadows = Set(registry?.shadows.map(\.version) ?? [])
        var object = JSONObject()
        object.append("currentVersion", registry.map { .string($0.currentVersion) } ?? .null)
        object.append(
            "versions",
            .array(
                (registry?.versions ?? []).map { model in
                    var version = JSONObject()
                    version.append("version", .string(model.version))
                    version.append("status", .string(model.withdrawn ? "withdrawn" : "active"))
                    version.append("current", .bool(model.version == registry?.currentVersion))
                    version.append("shadow", .bool(shadows.contains(model.version)))
                    version.append("trees", .number(Double(model.treeCount)))
                    version.append("features", .number(Double(model.features.count)))
                    return .object(version)
                }))
        exchange.send(Self.json(200, .object(object)))
    }

    /// `GET /admin/v1/velocity`: the velocity rules that fired and the shadow decision policy's
    /// disagreements, for the admin's tenant and environment, on this instance since it started.
    func adminVelocity(_ exchange: Exchange) throws {
        let counts = useCases.evaluation.velocityCounts(of: try exchange.authenticated())
        var object = JSONObject()
        object.append("scope", .string("instance"))
        object.append("startedAt", Self.startedAt(dependencies.metrics.registry))
        object.append(
            "rules",
            .array(
                counts.rules.map { rule in
                    .object(["rule": .string(rule.rule), "mode": .string(rule.mode), "count": .number(rule.count)])
                }))
        object.append(
            "shadowPolicyDisagreements",
            .array(
                counts.shadowPolicyDisagreements.map { disagreement in
                    .object([
                        "rule": .string(disagreement.rule), "shadowAction": .string(disagreement.shadowAction),
                        "action": .string(disagreement.action), "count": .number(disagreement.count)
                    ])
                }))
        exchange.send(Self.json(200, .object(object)))
    }

    /// `GET /admin/v1/health`: readiness, and whether this instance's writes fail or queue. How
    /// many writes it committed, and in how many commits, is left out: those count every
    /// tenant's traffic (another tenant's volume and timing), and are the operator's, on the
    /// metrics listener (`insightd_store_commit_batch_size`, docs/operations.md "Admin console").
    func adminHealth(_ exchange: Exchange) {
        let registry = dependencies.metrics.registry
        let readiness = dependencies.readiness
        func total(_ name: String) -> JSONValue {
            let samples = registry.samples(name)
            return samples.isEmpty ? .null : .number(samples.reduce(0) { $0 + $1.value })
        }
        var store = JSONObject()
        store.append("reachable", .bool(readiness.isStoreReachable))
        store.append("writeFailures", total("insightd_store_write_failures_total"))
        store.append("queueDepth", total("insightd_write_queue_depth"))
        var object = JSONObject()
        object.append("scope", .string("instance"))
        object.append("startedAt", Self.startedAt(registry))
        object.append("ready", .bool(readiness.isReady && readiness.isStoreReachable))
        object.append("velocity", .string(readiness.isVelocityReady ? "ready" : "rebuilding"))
        object.append("store", .object(store))
        exchange.send(Self.json(200, .object(object)))
    }

    /// When this process started (`process_start_time_seconds`), or null where it is not counted.
    static func startedAt(_ registry: MetricsRegistry) -> JSONValue {
        guard let seconds = registry.samples("process_start_time_seconds").first?.value else { return .null }
        return .string(Timestamp.format(Milliseconds(seconds * 1000)))
    }
}
