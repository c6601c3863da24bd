// insightd-bench: in-process micro-benchmarks of insightd's hot paths, and the generator of the
// request bodies bench/run.sh sends with wrk. A benchmark, not a test: it prints figures and
// fails only when it cannot run.
//
//   insightd-bench [--quick] [--filter SUBSTRING]... [--models DIR] [--list]
//   insightd-bench bodies DIR        write w1-events150.json and w2-summary.json (with @ID@)
//   insightd-bench history DATABASE CALLER_ID COUNT
//                                    insert COUNT synthetic evaluations of the last 7 days
//                                    (bench/restart.sh measures a restart on them)
//   insightd-bench replay DATABASE whole|BATCH
//                                    replay the store's last 7 days into a tracker in process
//   insightd-bench performance DATABASE COUNT
//                                    fill a new store with COUNT evaluations of a year (SQL) and
//                                    time the model performance report over 1 to 92 days
//
// Adding a suite: write `enum SomethingBenchmarks { static func all() ->
// [MicroBenchmark] }` in this directory using `measure(...)`, add one line to `suites` below,
// and add its module to the insightd-bench target's dependencies in Package.swift.
#if canImport(Glibc)
    import Glibc
#endif

func usage() -> Never {
    print(
        """
        usage: insightd-bench [--quick] [--filter SUBSTRING]... [--models DIR] [--list]
               insightd-bench bodies DIR
               insightd-bench history DATABASE CALLER_ID COUNT
               insightd-bench replay DATABASE whole|BATCH
               insightd-bench performance DATABASE COUNT
        """)
    exit(64)
}

/// Writes to standard error (fd 2) without touching the C `stderr` global.
func printError(_ message: String) {
    let bytes = Array((message + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    printError("insightd-bench: \(message)")
    exit(1)
}

func writeFile(_ path: String, _ text: String) {
    guard let file = fopen(path, "w") else { fail("cannot write \(path)") }
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    fclose(file)
    if written != bytes.count { fail("short write to \(path)") }
}

var options = RunOptions()
var listOnly = false
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "bodies" {
    guard arguments.count == 2 else { usage() }
    let directory = arguments[1]
    do {
        let events = SessionGenerator.events(count: 150)
        writeFile(directory + "/w1-events150.json", SessionGenerator.eventsBody(events))
        writeFile(
            directory + "/w2-summary.json",
            SessionGenerator.summaryBody(try SessionGenerator.summary(of: events)))
    } catch {
        fail("\(error)")
    }
    exit(0)
}
if arguments.first == "history" {
    guard arguments.count == 4, let count = Int(arguments[3]), count >= 0 else { usage() }
    HistoryFill.run(database: arguments[1], callerId: arguments[2], count: count)
    exit(0)
}
if arguments.first == "replay" {
    guard arguments.count == 3 else { usage() }
    ReplayBench.run(database: arguments[1], mode: arguments[2])
    exit(0)
}
if arguments.first == "performance" {
    guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else { usage() }
    PerformanceReportBench.run(database: arguments[1], count: count)
    exit(0)
}
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--quick": options.quick = true
    case "--list": listOnly = true
    case "--filter":
        guard !arguments.isEmpty else { usage() }
        options.filters.append(arguments.removeFirst())
    case "--models":
        guard !arguments.isEmpty else { usage() }
        options.modelsDirectory = arguments.removeFirst()
    default: usage()
    }
}

/// Every suite, in the order printed. Each builds its benchmarks (loading fixtures once).
let suites: [(name: String, make: () throws -> [MicroBenchmark])] = [
    ("json", { try RequestPathBenchmarks.json() }),
    ("model", { [options] in RequestPathBenchmarks.model(options) }),
    ("crypto", { try RequestPathBenchmarks.crypto() }),
    ("store", { StoreBenchmarks.all() }),
    ("velocity", { VelocityBenchmarks.all() })
]

var rows: [Measurement] = []
for suite in suites {
    let benchmarks: [MicroBenchmark]
    do {
        benchmarks = try suite.make()
    } catch {
        fail("suite \(suite.name): \(error)")
    }
    for benchmark in benchmarks where options.selects(benchmark.name) {
        if listOnly {
            print("\(benchmark.name)\t\(benchmark.note)")
            continue
        }
        printError("  running \(benchmark.name)")
        do {
            var measurement = try benchmark.run(options)
            measurement.name = benchmark.name
            if measurement.note.isEmpty { measurement.note = benchmark.note }
            rows.append(measurement)
        } catch {
            fail("\(benchmark.name): \(error)")
        }
    }
}
if !listOnly {
    print("")
    print(
        "insightd micro-benchmarks\(options.quick ? " (--quick: short, noisy)" : ""): one thread unless noted; "
            + "median and p99 of per-operation times")
    print("")
    printTable(rows)
}
