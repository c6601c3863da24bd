internal import Glibc

/// The standard `process_*` metrics of Prometheus clients, read from `/proc` at scrape time:
/// CPU seconds, resident and virtual memory, open and maximum file descriptors, start time.
public enum ProcessMetrics {
    /// Registers the `process_*` families on `registry` (Linux; each reads `/proc/self`).
    public static func register(on registry: MetricsRegistry) {
        registry.collect(
            "process_cpu_seconds_total", help: "Total user and system CPU time spent in seconds.",
            type: .counter
        ) {
            guard let stat = ProcessStat.read() else { return [] }
            return [([], stat.cpuSeconds)]
        }
        registry.collect("process_resident_memory_bytes", help: "Resident memory size in bytes.", type: .gauge) {
            guard let stat = ProcessStat.read() else { return [] }
            return [([], stat.residentBytes)]
        }
        registry.collect("process_virtual_memory_bytes", help: "Virtual memory size in bytes.", type: .gauge) {
            guard let stat = ProcessStat.read() else { return [] }
            return [([], stat.virtualBytes)]
        }
        registry.collect(
            "process_start_time_seconds",
            help: "Start time of the process since unix epoch in seconds.", type: .gauge
        ) {
            guard let stat = ProcessStat.read() else { return [] }
            return [([], ProcessStat.bootTime() + stat.startTicks / ProcessStat.ticksPerSecond)]
        }
        registry.collect("process_open_fds", help: "Number of open file descriptors.", type: .gauge) {
            guard let count = ProcessStat.openDescriptors() else { return [] }
            return [([], Double(count))]
        }
        registry.collect("process_max_fds", help: "Maximum number of open file descriptors.", type: .gauge) {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return [] }
            // RLIM_INFINITY is all ones; Swift cannot import the macro's value for an unsigned type.
            return [([], limit.rlim_cur == rlim_t.max ? .infinity : Double(limit.rlim_cur))]
        }
    }
}

/// The fields of `/proc/self/stat` the process metrics need (see proc(5)).
struct ProcessStat {
    var cpuSeconds: Double
    var startTicks: Double
    var virtualBytes: Double
    var residentBytes: Double

    static var ticksPerSecond: Double { Double(sysconf(Int32(_SC_CLK_TCK))) }

    static func read() -> ProcessStat? {
        guard let text = readSmallFile("/proc/self/stat") else { return nil }
        return parse(text, pageSize: Double(sysconf(Int32(_SC_PAGESIZE))), ticksPerSecond: ticksPerSecond)
    }

    /// Parses a `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may
    /// contain spaces and parentheses, so fields are counted from the last `)`.
    static func parse(_ text: String, pageSize: Double, ticksPerSecond: Double) -> ProcessStat? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        // Fields from 3 (state) on; field n is at index n - 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        func field(_ number: Int) -> Double? {
            let index = number - 3
            return fields.indices.contains(index) ? Double(fields[index]) : nil
        }
        guard let user = field(14), let system = field(15), let start = field(22), let virtual = field(23),
            let resident = field(24)
        else { return nil }
        return ProcessStat(
            cpuSeconds: (user + system) / ticksPerSecond, startTicks: start,
            virtualBytes: virtual, residentBytes: resident * pageSize)
    }

    /// The boot time in seconds since the epoch: now minus the time since boot. From the clocks
    /// rather than `/proc/stat`'s `btime`, which systemd's `ProcSubset=pid` hides.
    static func bootTime() -> Double {
        var realtime = timespec()
        var sinceBoot = timespec()
        clock_gettime(CLOCK_REALTIME, &realtime)
        clock_gettime(CLOCK_BOOTTIME, &sinceBoot)  // the clock of /proc/self/stat's starttime
        return seconds(realtime) - seconds(sinceBoot)
    }

    private static func seconds(_ time: timespec) -> Double {
        Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The number of entries in `/proc/self/fd`, not counting the one used to list it.
    static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        // Only the name's first byte is read, in place: an entry is as long as its name, so
        // copying the whole `dirent` (`entry.pointee`) can read past the end of the kernel's
        // buffer into an unmapped page.
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(directory) {
            let first = UnsafeRawPointer(entry).load(fromByteOffset: nameOffset, as: UInt8.self)
            if first != UInt8(ascii: ".") { count += 1 }
        }
        return count - 1
    }

    private static func readSmallFile(_ path: String, limit: Int = 4096) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
