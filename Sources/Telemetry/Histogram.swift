internal import Synchronization

/// One histogram series: observations counted in buckets, with their sum and count.
///
/// Lock-free: an observation is a binary search over the bounds, one atomic add on its bucket
/// and a compare-exchange loop on the sum. Buckets are stored non-cumulatively and made
/// cumulative at scrape time; `_count` is the sum of the buckets, so `le="+Inf"` always equals
/// `_count`. `_sum` is read separately and may lag a concurrent observation by that observation.
public final class Histogram: @unchecked Sendable {
    // @unchecked: `counts` is a fixed-size buffer of atomics, allocated in `init`, never resized,
    // and freed in `deinit`; every access goes through the atomics' own operations.

    /// Finite, strictly increasing upper bounds; the implicit last bucket is `+Inf`.
    let upperBounds: [Double]
    /// `upperBounds.count + 1` atomics: observations per bucket (not cumulative), `+Inf` last.
    private let counts: UnsafeMutablePointer<Atomic<UInt64>>
    private let bucketCount: Int
    private let sumBits = Atomic<UInt64>(0)

    init(upperBounds: [Double]) {
        self.upperBounds = upperBounds
        bucketCount = upperBounds.count + 1
        counts = .allocate(capacity: bucketCount)
        for index in 0..<bucketCount {
            (counts + index).initialize(to: Atomic(0))
        }
    }

    deinit {
        counts.deinitialize(count: bucketCount)
        counts.deallocate()
    }

    /// Records one observation. NaN counts only in `+Inf` (and makes `_sum` NaN), as in
    /// client_golang.
    public func observe(_ value: Double) {
        // First bucket whose bound is >= value (Prometheus buckets are `le`, less or equal).
        var low = 0
        var high = bucketCount - 1
        upperBounds.withUnsafeBufferPointer { bounds in
            while low < high {
                let middle = (low + high) / 2
                if value <= bounds[middle] { high = middle } else { low = middle + 1 }
            }
        }
        counts[low].wrappingAdd(1, ordering: .relaxed)
        AtomicDouble.add(sumBits, value)
    }

    /// Records a duration, in seconds (the base unit).
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) * 1e-18)
    }

    /// Cumulative bucket counts (`upperBounds.count + 1` of them, `+Inf` last, equal to the
    /// count) and the sum.
    public func snapshot() -> (cumulativeCounts: [UInt64], sum: Double) {
        var cumulative: [UInt64] = []
        cumulative.reserveCapacity(bucketCount)
        var running: UInt64 = 0
        for index in 0..<bucketCount {
            running &+= counts[index].load(ordering: .relaxed)
            cumulative.append(running)
        }
        return (cumulative, AtomicDouble.load(sumBits))
    }

    /// The number of observations.
    public var count: UInt64 { snapshot().cumulativeCounts.last ?? 0 }

    /// The sum of the observations.
    public var sum: Double { AtomicDouble.load(sumBits) }
}

/// A histogram with label dimensions; each distinct tuple of label values is one `Histogram`.
public final class HistogramFamily: Sendable {
    /// The metric name (its series are `_bucket`, `_sum` and `_count`).
    public let name: String
    /// The `# HELP` text.
    public let help: String
    /// The finite upper bounds shared by every series; `+Inf` is implicit.
    public let buckets: [Double]
    /// The label names, in exposition order (never `le`).
    public var labelNames: [String] { table.labelNames }
    let table: SeriesTable<Histogram>
    /// The `le` label value of each bucket, `+Inf` last, formatted once.
    let bucketLabels: [String]

    init(name: String, help: String, labelNames: [String], buckets: [Double], limits: SeriesLimits) {
        self.name = name
        self.help = help
        self.buckets = buckets
        bucketLabels = buckets.map(Exposition.number) + ["+Inf"]
        table = SeriesTable(labelNames: labelNames, limits: limits) { Histogram(upperBounds: buckets) }
    }

    /// The series for these label values, created on first use (see `CounterFamily.labels(_:)`).
    /// - Precondition: as many values as label names.
    public func labels(_ values: String...) -> Histogram { table.series(values) }

    /// `labels(_:)` taking an array, for callers that forward label values.
    public func labels(values: [String]) -> Histogram { table.series(values) }

    /// Records `value` in the series for `values`; `family.observe(value: 0.2)` without labels.
    public func observe(_ values: String..., value: Double) {
        table.series(values).observe(value)
    }
}
