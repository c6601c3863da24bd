/// The Prometheus metric types this registry exposes (the `# TYPE` line).
public enum MetricType: String, Sendable {
    /// A value that only goes up (reset only by a restart); its name ends in `_total`.
    case counter
    /// A value that goes up and down.
    case gauge
    /// Observations counted in cumulative buckets, with their sum and count.
    case histogram
}
