import Telemetry

/// The HTTP layer's metrics: request durations by route template, method and status (routes are
/// templates, never ids). What the use cases count is `ServiceMetrics`.
public final class APIMetrics: Sendable {
    public let registry: MetricsRegistry
    let requestDuration: HistogramFamily

    public init(registry: MetricsRegistry) {
        self.registry = registry
        requestDuration = registry.histogram(
            "insightd_http_request_duration_seconds",
            help: "Time from a parsed request to its response, by route template, method and status.",
            labels: ["route", "method", "status"], buckets: Buckets.requestDuration)
    }

    /// The methods a label may name; any other token a client sends counts as `other`, so a
    /// client inventing methods cannot fill the series table and crowd out the real series.
    /// (A scan of seven short names: hashing the method into a set cost more, on every request.)
    static let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    func observe(route: String, method: String, status: Int, seconds: Double) {
        requestDuration.observe(route, Self.methods.contains(method) ? method : "other", String(status), value: seconds)
    }
}
