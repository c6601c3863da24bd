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
        object.append("versions", .array((registry?.versions ?? []).map { model in
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
    /// disagreements, for the admin's tenant, on this instance since it started.
    func adminVelocity(_ exchange: Exchange) throws {
        let tenant = try exchange.authenticated().tenant
        let registry = dependencies.metrics.registry
        func ofTenant(_ name: String) -> [MetricsRegistry.Sample] {
            registry.samples(name).filter { $0.labels["tenant"] == tenant && $0.value > 0 }
                .sorted { ($0.value, $1.labels.sorted { $0.key < $1.key }.map(\.value).joined(separator: "\u{1}"))
                    > ($1.value, $0.labels.sorted { $0.key < $1.key }.map(\.value).joined(separator: "\u{1}")) }
        }
        var object = JSONObject()
        object.append("scope", .string("instance"))
        object.append("startedAt", Self.startedAt(registry))
        object.append("rules", .array(ofTenant("insightd_velocity_rules_total").map { sample in
            .object(["rule": .string(sample.labels["rule"] ?? ""), "mode": .string(sample.labels["mode"] ?? ""),
                     "count": .number(sample.value)])
        }))
        object.append("shadowPolicyDisagreements", .array(ofTenant("insightd_decision_shadow_disagreements_total").map { sample in
            .object(["rule": .string(sample.labels["rule"] ?? ""), "shadowAction": .string(sample.labels["shadow_action"] ?? ""),
                     "action": .string(sample.labels["action"] ?? ""), "count": .number(sample.value)])
        }))
        exchange.send(Self.json(200, .object(object)))
    }

    /// `GET /admin/v1/health`: readiness and the store's writes on this instance since it started.
    func adminHealth(_ exchange: Exchange) {
        let registry = dependencies.metrics.registry
        let readiness = dependencies.readiness
        func total(_ name: String) -> JSONValue {
            let samples = registry.samples(name)
            return samples.isEmpty ? .null : .number(samples.reduce(0) { $0 + $1.value })
        }
        var store = JSONObject()
        store.append("reachable", .bool(readiness.isStoreReachable))
        store.append("writesCommitted", total("insightd_store_commit_batch_size_sum"))
        store.append("commits", total("insightd_store_commit_batch_size_count"))
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
