// The measuring harness: a monotonic clock, per-iteration samples, median/p99, and the table.
#if canImport(Glibc)
    import Glibc
#endif

/// Nanoseconds on CLOCK_MONOTONIC.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// How long and how often to measure.
struct RunOptions: Sendable {
    /// Short run for smoke checks (`--quick`).
    var quick = false
    /// Only benchmarks whose name contains one of these (`--filter`); empty: all.
    var filters: [String] = []
    /// Models directory for the CoachingModel benchmarks (`--models`).
    var modelsDirectory = "models"

    /// Warm-up time per benchmark, seconds.
    var warmupSeconds: Double { quick ? 0.05 : 0.3 }
    /// Measuring time per benchmark, seconds (stops earlier at `maxIterations`).
    var measureSeconds: Double { quick ? 0.25 : 1.5 }
    /// Fewest measured iterations, whatever the time.
    var minIterations: Int { quick ? 50 : 1000 }
    /// Most measured iterations.
    var maxIterations: Int { quick ? 20_000 : 200_000 }
    /// Measuring time of each store benchmark, seconds.
    var storeSeconds: Double { quick ? 0.5 : 3 }

    func selects(_ name: String) -> Bool {
        filters.isEmpty || filters.contains { name.contains($0) }
    }
}

/// The result of one benchmark: per-operation times in nanoseconds, plus an optional throughput
/// that is not simply 1/mean (the store benchmarks run many operations at once).
struct Measurement {
    var name: String
    var note: String
    var samples: [UInt64]
    /// Operations per second measured over the whole run, when operations overlap.
    var throughput: Double?

    var iterations: Int { samples.count }
    func percentile(_ p: Double) -> UInt64 {
        precondition(!samples.isEmpty)
        let sorted = samples.sorted()
        // Nearest rank.
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
    var mean: Double { Double(samples.reduce(0, +)) / Double(samples.count) }
    var perSecond: Double { throughput ?? 1e9 / mean }
}

/// A micro-benchmark: a name to filter and print, what it measures, and how to run it.
struct MicroBenchmark {
    var name: String
    var note: String
    var run: (RunOptions) throws -> Measurement
}

/// Times `operation` once per iteration after a warm-up. `operation` returns something
/// derived from its work so that the optimiser cannot drop the work.
func measure(
    _ name: String, _ note: String, _ options: RunOptions,
    _ operation: () throws -> Int
) rethrows -> Measurement {
    let warmupEnd = monotonicNanoseconds() + UInt64(options.warmupSeconds * 1e9)
    var check = 0
    repeat { check &+= try operation() } while monotonicNanoseconds() < warmupEnd
    var samples: [UInt64] = []
    samples.reserveCapacity(min(options.maxIterations, 1 << 16))
    let deadline = monotonicNanoseconds() + UInt64(options.measureSeconds * 1e9)
    while samples.count < options.maxIterations {
        let start = monotonicNanoseconds()
        check &+= try operation()
        let end = monotonicNanoseconds()
        samples.append(end - start)
        if samples.count >= options.minIterations && end >= deadline { break }
    }
    blackHole(check)
    return Measurement(name: name, note: note, samples: samples, throughput: nil)
}

/// Keeps a value alive as far as the optimiser can tell.
@inline(never)
func blackHole(_ value: Int) {
    if value == 0x5EED_5EED_5EED { print("", terminator: "") }
}

/// "812 ns", "52.3 µs", "4.10 ms".
func formatDuration(_ nanoseconds: Double) -> String {
    if nanoseconds < 1_000 { return "\(fixed(nanoseconds, 0)) ns" }
    if nanoseconds < 1_000_000 { return "\(fixed(nanoseconds / 1_000, nanoseconds < 10_000 ? 2 : 1)) µs" }
    if nanoseconds < 1_000_000_000 { return "\(fixed(nanoseconds / 1_000_000, 2)) ms" }
    return "\(fixed(nanoseconds / 1_000_000_000, 2)) s"
}

/// `value` with `decimals` digits after the point (no Foundation).
func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let negative = value < 0
    let scaled = (abs(value) * scale).rounded()
    let whole = Int64(scaled / scale)
    var text = String(whole)
    if decimals > 0 {
        let fraction = Int64(scaled - Double(whole) * scale)
        var digits = String(fraction)
        while digits.count < decimals { digits = "0" + digits }
        text += "." + digits
    }
    return negative ? "-" + text : text
}

/// "1,234,567".
func grouped(_ value: Int) -> String {
    let digits = Array(String(abs(value)))
    var out = ""
    for (i, d) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(d)
    }
    return value < 0 ? "-" + out : out
}

func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let n = text.count
    guard n < width else { return text }
    let fill = String(repeating: " ", count: width - n)
    return right ? fill + text : text + fill
}

/// Prints the results as a fixed-width table (also valid Markdown).
func printTable(_ rows: [Measurement]) {
    let nameWidth = max(9, rows.map(\.name.count).max() ?? 0)
    let header =
        "| \(pad("benchmark", nameWidth)) | \(pad("iterations", 10, right: true)) | "
        + "\(pad("median", 10, right: true)) | \(pad("p99", 10, right: true)) | "
        + "\(pad("mean", 10, right: true)) | \(pad("ops/s", 11, right: true)) | what |"
    print(header)
    print("|" + String(repeating: "-", count: nameWidth + 2) + "|-----------:|-----------:|-----------:|-----------:|------------:|------|")
    for row in rows {
        print(
            "| \(pad(row.name, nameWidth)) | \(pad(grouped(row.iterations), 10, right: true)) | "
                + "\(pad(formatDuration(Double(row.percentile(50))), 10, right: true)) | "
                + "\(pad(formatDuration(Double(row.percentile(99))), 10, right: true)) | "
                + "\(pad(formatDuration(row.mean), 10, right: true)) | "
                + "\(pad(grouped(Int(row.perSecond.rounded())), 11, right: true)) | \(row.note) |")
    }
}
