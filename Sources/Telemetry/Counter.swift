internal import Synchronization

/// One counter series: a value that only goes up.
///
/// Lock-free: whole-number increments (the usual `increment()`) are one atomic add; fractional
/// ones a compare-exchange loop on a separate `Double`. Keep the `Counter` returned by
/// `CounterFamily.labels(_:)` when the label values are known in advance: incrementing it then
/// costs one atomic instruction and no lookup.
public final class Counter: Sendable {
    /// Whole-number increments: exact up to 2^64, and a single `lock xadd`.
    private let whole = Atomic<UInt64>(0)
    /// Fractional (or huge, or infinite) increments, as a `Double` bit pattern (0 is 0.0).
    private let fraction = Atomic<UInt64>(0)

    init() {}

    /// Adds `amount` (default 1).
    ///
    /// - Precondition: `amount >= 0` (not NaN). A counter that goes down breaks `rate()`; like
    ///   client_golang, a negative increment is a programming error and traps.
    public func increment(by amount: Double = 1) {
        precondition(amount >= 0, "a counter cannot decrease (increment by \(amount))")
        if amount < 0x1p53, amount.rounded(.towardZero) == amount {
            whole.wrappingAdd(UInt64(amount), ordering: .relaxed)
        } else {
            AtomicDouble.add(fraction, amount)
        }
    }

    /// The current value.
    public var value: Double {
        Double(whole.load(ordering: .relaxed)) + AtomicDouble.load(fraction)
    }
}

/// A counter with label dimensions; each distinct tuple of label values is one `Counter` series.
public final class CounterFamily: Sendable {
    /// The metric name (ends in `_total`).
    public let name: String
    /// The `# HELP` text.
    public let help: String
    /// The label names, in exposition order.
    public var labelNames: [String] { table.labelNames }
    let table: SeriesTable<Counter>

    init(name: String, help: String, labelNames: [String], limits: SeriesLimits) {
        self.name = name
        self.help = help
        table = SeriesTable(labelNames: labelNames, limits: limits) { Counter() }
    }

    /// The series for these label values (one per label name, in order), created on first use.
    ///
    /// Beyond the family's series limit, or for an over-long value, this is the overflow series
    /// whose label values are all `"other"`.
    /// - Precondition: as many values as label names.
    public func labels(_ values: String...) -> Counter { table.series(values) }

    /// `labels(_:)` taking an array, for callers that forward label values.
    public func labels(values: [String]) -> Counter { table.series(values) }

    /// Adds `amount` to the series for `values`; `family.increment()` for a family without labels.
    public func increment(_ values: String..., by amount: Double = 1) {
        table.series(values).increment(by: amount)
    }
}
