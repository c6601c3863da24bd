#if canImport(Glibc)
    import Glibc
#endif
import Crypto
import InsightDomain

/// Velocity: the cost per evaluation of one lookup (`signals`) plus one update
/// (`record`) with 10^4 and 10^6 subjects already tracked, and the resident memory the fill took.
enum VelocityBenchmarks {
    static func all() -> [MicroBenchmark] {
        [10_000, 1_000_000].map { subjects in
            MicroBenchmark(
                name: "velocity signals+record, \(grouped(subjects)) subjects",
                note: "one evaluation's lookup and update"
            ) { options in
                try run(subjects: options.quick ? min(subjects, 100_000) : subjects, options: options)
            }
        }
    }

    struct FixedClock: Clock {
        let time: Milliseconds
        func now() -> Milliseconds { time }
    }

    static func residentBytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var size = 0, resident = 0
        _ = withUnsafeMutablePointer(to: &size) { s in
            withUnsafeMutablePointer(to: &resident) { r in fscanf_ints(file, s, r) }
        }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func run(subjects: Int, options: RunOptions) throws -> Measurement {
        let now: Milliseconds = 1_800_000_000_000
        let tracker = VelocityTracker(clock: FixedClock(time: now))
        // Distinct, uniformly spread 32-byte values standing in for HMAC outputs (the tracker
        // shards by hash bytes, so they must look random).
        func hash(_ kind: UInt8, _ n: Int) -> [UInt8] {
            SHA256.digest([kind, UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8((n >> 24) & 0xFF)])
        }
        let accounts = subjects * 45 / 100, devices = subjects * 45 / 100, payees = subjects / 10
        let before = residentBytes()
        for i in 0..<accounts {
            for j in 0..<3 {
                tracker.record(
                    VelocityEvent(
                        environment: .production, time: now - Milliseconds(j) * 3_600_000,
                        account: hash(1, i), device: hash(2, i % max(devices, 1)),
                        counterparty: hash(3, (i * 7 + j) % max(payees, 1)), isPayment: true,
                        value: .unknown))
            }
        }
        let grown = residentBytes() - before
        // Subjects spread over the whole tracked population, hashed before the timing starts.
        let pool = (0..<4096).map { n -> ([UInt8], [UInt8], [UInt8]) in
            let i = (n &* 2_654_435_761) % max(accounts, 1)
            return (hash(1, i), hash(2, i % max(devices, 1)), hash(3, n % max(payees, 1)))
        }
        var n = 0
        return measure(
            "velocity signals+record, \(grouped(subjects)) subjects",
            "tracked \(grouped(tracker.trackedSubjects)); the fill grew RSS by \(grouped(grown / 1_048_576)) MiB",
            options
        ) {
            n &+= 1
            let (account, device, payee) = pool[n & 4095]
            let signals = tracker.signals(
                for: VelocityQuery(
                    environment: .production, accounts: [account], devices: [device],
                    counterparties: [payee], isPayment: true))
            tracker.record(
                VelocityEvent(
                    environment: .production, time: now, account: account, device: device,
                    counterparty: payee, isPayment: true, value: .unknown))
            return signals.accountEvaluations.week
        }
    }
}

/// `fscanf` is variadic and unavailable to Swift: read two integers by hand.
func fscanf_ints(_ file: UnsafeMutablePointer<FILE>, _ a: UnsafeMutablePointer<Int>, _ b: UnsafeMutablePointer<Int>) -> Int32 {
    var buffer = [CChar](repeating: 0, count: 128)
    guard fgets(&buffer, 128, file) != nil else { return 0 }
    let line = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    let fields = String(decoding: line, as: UTF8.self).split(separator: " ")
    guard fields.count >= 2, let x = Int(fields[0]), let y = Int(fields[1]) else { return 0 }
    a.pointee = x
    b.pointee = y
    return 2
}
