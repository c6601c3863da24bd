internal import Synchronization

/// One gauge series: a value that goes up and down. Lock-free (an atomic `Double`).
public final class Gauge: Sendable {
    private let bits = Atomic<UInt64>(0)

    init() {}

    /// Replaces the value.
    public func set(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
    }

    /// Adds `delta` (which may be negative).
    public func add(_ delta: Double) {
        AtomicDouble.add(bits, delta)
    }

    /// Adds `amount` (default 1).
    public func increment(by amount: Double = 1) { add(amount) }

    /// Subtracts `amount` (default 1).
    public func decrement(by amount: Double = 1) { add(-amount) }

    /// The current value.
    public var value: Double { AtomicDouble.load(bits) }
}

/// A gauge with label dimensions; each distinct tuple of label values is one `Gauge` series.
public final class GaugeFamily: Sendable {
    /// The metric name.
    public let name: String
    /// The `# HELP` text.
    public let help: String
    /// The label names, in exposition order.
    public var labelNames: [String] { table.labelNames }
    let table: SeriesTable<Gauge>

    init(name: String, help: String, labelNames: [String], limits: SeriesLimits) {
        self.name = name
        self.help = help
        table = SeriesTable(labelNames: labelNames, limits: limits) { Gauge() }
    }

    /// The series for these label values, created on first use (see `CounterFamily.labels(_:)`).
    /// - Precondition: as many values as label names.
    public func labels(_ values: String...) -> Gauge { table.series(values) }

    /// `labels(_:)` taking an array, for callers that forward label values.
    public func labels(values: [String]) -> Gauge { table.series(values) }

    /// Sets the series for `values` to `value`; `family.set(to: 1)` for a family without labels.
    public func set(_ values: String..., to value: Double) {
        table.series(values).set(value)
    }

    /// Adds `delta` to the series for `values`.
    public func add(_ values: String..., by delta: Double) {
        table.series(values).add(delta)
    }
}
