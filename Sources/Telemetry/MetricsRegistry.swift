internal import Locking

/// A Prometheus metrics registry rendering the text exposition format 0.0.4.
///
/// Registration (`counter`, `gauge`, `histogram`, `collect`) is idempotent per name: asking
/// again for the same name, type and labels returns the same family, so modules can register
/// what they use without coordinating. Registration takes a lock; updating a series never does
/// (per-series atomics), and finding a series by label values takes one of 16 shard locks of
/// its family for a dictionary lookup. Keep the series handle when the label values are fixed.
///
/// Invalid input at registration is a programming error and traps (`precondition`): a metric
/// name not matching `[a-zA-Z_:][a-zA-Z0-9_:]*`, a label name not matching `[a-zA-Z_][a-zA-Z0-9_]*`
/// or starting with `__`, a duplicate label name, `le` on a histogram, a counter name without
/// `_total`, histogram buckets that are empty, not finite or not strictly increasing, a name
/// registered again with another type, labels or buckets, or a name whose samples would clash
/// with another family's (`x_count` beside histogram `x`). Check names built at run time with
/// `PrometheusName` first.
public final class MetricsRegistry: Sendable {
    /// The `Content-Type` of `render()`'s output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The series limits a family gets unless it asks for others.
    public let defaultLimits: SeriesLimits
    private let families = Locked<[String: Family]>([:])

    /// An empty registry; families get `defaultLimits` (1,000 series each) unless they say.
    public init(defaultLimits: SeriesLimits = .default) {
        self.defaultLimits = defaultLimits
    }

    /// The counter family `name` (which must end in `_total`), created on first call.
    public func counter(
        _ name: String, help: String, labels: [String] = [],
        limits: SeriesLimits? = nil
    ) -> CounterFamily {
        precondition(name.hasSuffix("_total"), "counter \(name) must end in _total")
        let family = register(name, .counter, labels, []) {
            .counter(CounterFamily(name: name, help: help, labelNames: labels, limits: limits ?? defaultLimits))
        }
        guard case .counter(let counter) = family else { preconditionFailure("unreachable") }
        return counter
    }

    /// The gauge family `name`, created on first call.
    public func gauge(
        _ name: String, help: String, labels: [String] = [],
        limits: SeriesLimits? = nil
    ) -> GaugeFamily {
        let family = register(name, .gauge, labels, []) {
            .gauge(GaugeFamily(name: name, help: help, labelNames: labels, limits: limits ?? defaultLimits))
        }
        guard case .gauge(let gauge) = family else { preconditionFailure("unreachable") }
        return gauge
    }

    /// The histogram family `name` with these finite, strictly increasing bucket bounds (`+Inf`
    /// is added; a trailing `+Inf` given here is ignored), created on first call.
    public func histogram(
        _ name: String, help: String, labels: [String] = [], buckets: [Double],
        limits: SeriesLimits? = nil
    ) -> HistogramFamily {
        var bounds = buckets
        if bounds.last == .infinity { bounds.removeLast() }
        precondition(!bounds.isEmpty, "histogram \(name) needs at least one finite bucket")
        precondition(bounds.allSatisfy(\.isFinite), "histogram \(name) buckets must be finite")
        precondition(
            zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 },
            "histogram \(name) buckets must be strictly increasing")
        precondition(!labels.contains("le"), "histogram \(name) cannot have a label named le")
        let family = register(name, .histogram, labels, bounds) {
            .histogram(
                HistogramFamily(
                    name: name, help: help, labelNames: labels, buckets: bounds,
                    limits: limits ?? defaultLimits))
        }
        guard case .histogram(let histogram) = family else { preconditionFailure("unreachable") }
        return histogram
    }

    /// A family whose samples `sample` returns at each scrape, e.g. a queue depth: one
    /// `(labels, value)` per series, label values in the order of `labels` (label names).
    ///
    /// `type` is `.gauge` or `.counter` (then `name` ends in `_total`). Registering the same
    /// name again replaces the callback. `sample` runs on the scraping thread, outside the
    /// registry's lock; it must be quick. Samples with the wrong number of label values are
    /// dropped, duplicates are added together, and tuples beyond the limits go to `"other"`.
    public func collect(
        _ name: String, help: String, type: MetricType, labels: [String] = [],
        limits: SeriesLimits? = nil,
        _ sample: @escaping @Sendable () -> [(labels: [String], value: Double)]
    ) {
        precondition(type != .histogram, "collect(\(name)): callbacks provide counters or gauges")
        precondition(type != .counter || name.hasSuffix("_total"), "counter \(name) must end in _total")
        let collector = Collector(
            name: name, help: help, type: type, labelNames: labels,
            limits: limits ?? defaultLimits, sample: sample)
        _ = register(name, type, labels, [], replacing: true) { .collector(collector) }
    }

    /// The whole exposition: families sorted by name, each family's series sorted by label
    /// values, label names in registration order. Empty when nothing is registered.
    public func render() -> String {
        let sorted = families.withLock { Array($0.values) }.sorted { $0.name < $1.name }
        var out = ""
        out.reserveCapacity(4096)
        for family in sorted {
            family.render(into: &out)
        }
        return out
    }

    /// One sample as `/metrics` shows it: its label names mapped to values.
    public struct Sample: Sendable, Equatable {
        public var labels: [String: String]
        public var value: Double
    }

    /// The samples named `sample` as `render()` would write them now, for an in-process reader
    /// (the admin API's health and velocity views): a counter's or gauge's series, a collector's
    /// callback, or a histogram's `NAME_sum` and `NAME_count` (never its buckets). Empty when
    /// nothing of that name is registered.
    public func samples(_ sample: String) -> [Sample] {
        func series<S>(_ table: SeriesTable<S>, _ value: (S) -> Double) -> [Sample] {
            table.entries().map { entry in
                Sample(labels: Dictionary(uniqueKeysWithValues: zip(table.labelNames, entry.values)), value: value(entry.series))
            }
        }
        let found = families.withLock { families in
            families[sample].map { ($0, "") }
                ?? (sample.hasSuffix("_sum") ? families[String(sample.dropLast(4))].map { ($0, "sum") } : nil)
                ?? (sample.hasSuffix("_count") ? families[String(sample.dropLast(6))].map { ($0, "count") } : nil)
        }
        switch found {
        case (.counter(let family), "")?: return series(family.table) { $0.value }
        case (.gauge(let family), "")?: return series(family.table) { $0.value }
        case (.histogram(let family), "sum")?: return series(family.table) { $0.sum }
        case (.histogram(let family), "count")?: return series(family.table) { Double($0.count) }
        case (.collector(let collector), "")?:
            var added: [[String]: Double] = [:]
            for (labels, value) in collector.sample() where labels.count == collector.labelNames.count {
                added[labels, default: 0] += value
            }
            return added.map { Sample(labels: Dictionary(uniqueKeysWithValues: zip(collector.labelNames, $0.key)), value: $0.value) }
        default: return []
        }
    }

    /// Registers or finds `name`; traps on invalid names and conflicting registrations.
    private func register(
        _ name: String, _ type: MetricType, _ labels: [String], _ buckets: [Double],
        replacing: Bool = false, make: () -> Family
    ) -> Family {
        precondition(PrometheusName.isValidMetricName(name), "invalid metric name \(String(reflecting: name))")
        for label in labels {
            precondition(
                PrometheusName.isValidLabelName(label),
                "metric \(name): invalid label name \(String(reflecting: label))")
        }
        precondition(Set(labels).count == labels.count, "metric \(name): duplicate label names \(labels)")
        return families.withLock { families in
            if let existing = families[name] {
                precondition(
                    existing.type == type && existing.labelNames == labels && existing.buckets == buckets,
                    "metric \(name) is already registered as \(existing.type.rawValue) "
                        + "with labels \(existing.labelNames)")
                guard replacing else { return existing }
            } else {
                let samples = Family.sampleNames(name, type)
                for other in families.values {
                    precondition(
                        Family.sampleNames(other.name, other.type).isDisjoint(with: samples),
                        "metric \(name) clashes with the samples of \(other.name)")
                }
            }
            let family = make()
            families[name] = family
            return family
        }
    }
}

/// A registered family of any kind.
enum Family: Sendable {
    case counter(CounterFamily)
    case gauge(GaugeFamily)
    case histogram(HistogramFamily)
    case collector(Collector)

    var name: String {
        switch self {
        case .counter(let family): family.name
        case .gauge(let family): family.name
        case .histogram(let family): family.name
        case .collector(let collector): collector.name
        }
    }

    var type: MetricType {
        switch self {
        case .counter: .counter
        case .gauge: .gauge
        case .histogram: .histogram
        case .collector(let collector): collector.type
        }
    }

    var labelNames: [String] {
        switch self {
        case .counter(let family): family.labelNames
        case .gauge(let family): family.labelNames
        case .histogram(let family): family.labelNames
        case .collector(let collector): collector.labelNames
        }
    }

    var buckets: [Double] {
        if case .histogram(let family) = self { return family.buckets }
        return []
    }

    /// The sample names a family of this type writes.
    static func sampleNames(_ name: String, _ type: MetricType) -> Set<String> {
        type == .histogram ? [name + "_bucket", name + "_sum", name + "_count"] : [name]
    }

    func render(into out: inout String) {
        switch self {
        case .counter(let family):
            Exposition.appendHeader(family.name, family.help, .counter, to: &out)
            for entry in family.table.entries() {
                Exposition.appendSample(family.name, entry.labelText, Exposition.number(entry.series.value), to: &out)
            }
        case .gauge(let family):
            Exposition.appendHeader(family.name, family.help, .gauge, to: &out)
            for entry in family.table.entries() {
                Exposition.appendSample(family.name, entry.labelText, Exposition.number(entry.series.value), to: &out)
            }
        case .histogram(let family):
            Exposition.appendHeader(family.name, family.help, .histogram, to: &out)
            let bucketName = family.name + "_bucket"
            let prefix = family.labelNames.isEmpty ? "" : ","
            for entry in family.table.entries() {
                let (cumulative, sum) = entry.series.snapshot()
                for (le, count) in zip(family.bucketLabels, cumulative) {
                    let labels = entry.labelText + prefix + "le=\"\(le)\""
                    Exposition.appendSample(bucketName, labels, String(count), to: &out)
                }
                Exposition.appendSample(family.name + "_sum", entry.labelText, Exposition.number(sum), to: &out)
                Exposition.appendSample(family.name + "_count", entry.labelText, String(cumulative.last ?? 0), to: &out)
            }
        case .collector(let collector):
            collector.render(into: &out)
        }
    }
}
