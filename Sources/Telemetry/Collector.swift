/// A family whose samples are read at scrape time (queue depth, open connections, build info).
final class Collector: Sendable {
    let name: String
    let help: String
    let type: MetricType
    let labelNames: [String]
    let limits: SeriesLimits
    let sample: @Sendable () -> [(labels: [String], value: Double)]

    init(
        name: String, help: String, type: MetricType, labelNames: [String], limits: SeriesLimits,
        sample: @escaping @Sendable () -> [(labels: [String], value: Double)]
    ) {
        self.name = name
        self.help = help
        self.type = type
        self.labelNames = labelNames
        self.limits = limits
        self.sample = sample
    }

    /// Calls the callback and renders its samples.
    ///
    /// Scraping must not crash the daemon, so the callback's mistakes are absorbed rather than
    /// trapped on: a sample with the wrong number of label values is dropped; samples with the
    /// same label values are added together (a duplicate series would make the exposition
    /// invalid); label tuples beyond `limits` are added into the `"other"` series.
    func render(into out: inout String) {
        var values: [[String]: Double] = [:]
        for (labels, value) in sample() where labels.count == labelNames.count {
            values[labels, default: 0] += value
        }
        let overflowValues = labelNames.map { _ in overflowLabelValue }
        var kept: [[String]: Double] = [:]
        var overflow: Double?
        for (labels, value) in values.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            if labelNames.isEmpty {
                kept[labels] = value
            } else if labels == overflowValues || kept.count >= limits.maxSeries
                || labels.contains(where: { $0.utf8.count > limits.maxLabelValueBytes })
            {
                overflow = (overflow ?? 0) + value
            } else {
                kept[labels] = value
            }
        }
        if let overflow { kept[overflowValues] = overflow }
        Exposition.appendHeader(name, help, type, to: &out)
        for (labels, value) in kept.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            Exposition.appendSample(
                name, Exposition.labelText(names: labelNames, values: labels),
                Exposition.number(value), to: &out)
        }
    }
}
