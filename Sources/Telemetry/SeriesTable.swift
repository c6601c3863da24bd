internal import Locking
internal import Synchronization

/// How many series a family may hold, and how long a label value may be.
///
/// Label values come from requests; without a bound, a buggy or hostile caller could create
/// one series per value and grow memory and scrape size without limit. A label tuple that
/// would exceed `maxSeries`, or carries a value longer than `maxLabelValueBytes`, is counted in
/// one overflow series whose label values are all `"other"`.
public struct SeriesLimits: Sendable, Equatable {
    /// Distinct label tuples per family, not counting the overflow series.
    public var maxSeries: Int
    /// UTF-8 bytes per label value.
    public var maxLabelValueBytes: Int

    /// The defaults: 1,000 series, 256-byte values.
    public static let `default` = SeriesLimits(maxSeries: 1000, maxLabelValueBytes: 256)

    /// Limits with the given bounds.
    /// - Precondition: both are at least 1.
    public init(maxSeries: Int, maxLabelValueBytes: Int = 256) {
        precondition(maxSeries >= 1 && maxLabelValueBytes >= 1, "series limits must be at least 1")
        self.maxSeries = maxSeries
        self.maxLabelValueBytes = maxLabelValueBytes
    }
}

/// The label value of every label of the overflow series.
let overflowLabelValue = "other"

/// Label values with their hash computed once: it picks the shard and keys the dictionary.
///
/// The hash is FNV-1a over the values' UTF-8 bytes (0xFF, which UTF-8 never contains, between
/// values), from a per-process random seed: cheaper than `Hasher` for the short values labels
/// hold. It does not resist chosen-value collisions, but a
/// family holds at most `SeriesLimits.maxSeries` series, which bounds what collisions can cost.
struct LabelKey: Hashable, Sendable {
    let values: [String]
    let hash: Int

    private static let seed = UInt64.random(in: .min ... .max)

    init(_ values: [String]) {
        self.values = values
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ Self.seed
        let prime: UInt64 = 0x100_0000_01b3
        for value in values {
            let contiguous: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
                for byte in bytes { hash = (hash ^ UInt64(byte)) &* prime }
            }
            if contiguous == nil {  // a bridged or lazily decoded string
                for byte in value.utf8 { hash = (hash ^ UInt64(byte)) &* prime }
            }
            hash = (hash ^ 0xff) &* prime
        }
        self.hash = Int(truncatingIfNeeded: hash)
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    static func == (left: LabelKey, right: LabelKey) -> Bool {
        left.hash == right.hash && left.values == right.values
    }
}

/// The series of one family: label values → series, sharded so that threads looking up
/// different series rarely meet on one lock. A family without labels has exactly one series
/// and no lookup at all.
final class SeriesTable<Series: AnyObject & Sendable>: Sendable {
    /// One series with its label values and their rendered `name="value",…` text.
    struct Entry: Sendable {
        let values: [String]
        let labelText: String
        let series: Series
    }

    /// One lock's worth of series. The lookup dictionary holds only the series, so a lookup
    /// retains one object; the entries (with their label text) are read only by scrapes.
    struct Shard {
        var series: [LabelKey: Series] = [:]
        var entries: [Entry] = []
    }

    private static var shardCount: Int { 16 }

    let labelNames: [String]
    let limits: SeriesLimits
    private let make: @Sendable () -> Series
    /// The only series of a family without labels (kept apart from its entry so that the hot
    /// path retains nothing but the series).
    private let single: Series?
    /// Label values all `"other"`; rendered once used.
    private let overflow: Entry
    private let overflowUsed = Atomic<Bool>(false)
    private let shards: [Locked<Shard>]
    /// Series created so far (not counting the overflow series); never above `limits.maxSeries`.
    private let created = Atomic<Int>(0)

    init(labelNames: [String], limits: SeriesLimits, make: @escaping @Sendable () -> Series) {
        self.labelNames = labelNames
        self.limits = limits
        self.make = make
        let overflowValues = labelNames.map { _ in overflowLabelValue }
        overflow = Entry(
            values: overflowValues,
            labelText: Exposition.labelText(names: labelNames, values: overflowValues),
            series: make())
        single = labelNames.isEmpty ? make() : nil
        shards = (0..<Self.shardCount).map { _ in Locked(Shard()) }
    }

    /// The series for `values`, created on first use; the overflow series beyond the limits.
    func series(_ values: [String]) -> Series {
        if let single {
            precondition(values.isEmpty, "this metric has no labels, got \(values.count) values")
            return single
        }
        precondition(
            values.count == labelNames.count,
            "expected \(labelNames.count) label values (\(labelNames)), got \(values.count)")
        let key = LabelKey(values)
        let shard = shards[Int(UInt(bitPattern: key.hash) % UInt(Self.shardCount))]
        if let found = shard.withLock({ $0.series[key] }) {
            return found
        }
        return insert(key, into: shard)
    }

    private func insert(_ key: LabelKey, into shard: Locked<Shard>) -> Series {
        let values = key.values
        if values == overflow.values
            || values.contains(where: { $0.utf8.count > limits.maxLabelValueBytes })
        {
            return useOverflow()
        }
        let series: Series? = shard.withLock { shard in
            if let existing = shard.series[key] { return existing }
            // Reserve a slot; give it back when the family is full.
            guard created.wrappingAdd(1, ordering: .relaxed).newValue <= limits.maxSeries else {
                created.wrappingSubtract(1, ordering: .relaxed)
                return nil
            }
            let entry = Entry(
                values: values,
                labelText: Exposition.labelText(names: labelNames, values: values),
                series: make())
            shard.series[key] = entry.series
            shard.entries.append(entry)
            return entry.series
        }
        return series ?? useOverflow()
    }

    private func useOverflow() -> Series {
        if !overflowUsed.load(ordering: .relaxed) {
            overflowUsed.store(true, ordering: .relaxed)
        }
        return overflow.series
    }

    /// Every series to render, sorted by label values (so the exposition is stable).
    func entries() -> [Entry] {
        if let single { return [Entry(values: [], labelText: "", series: single)] }
        var all: [Entry] = []
        for shard in shards {
            shard.withLock { all.append(contentsOf: $0.entries) }
        }
        if overflowUsed.load(ordering: .relaxed) { all.append(overflow) }
        all.sort { $0.values.lexicographicallyPrecedes($1.values) }
        return all
    }
}
