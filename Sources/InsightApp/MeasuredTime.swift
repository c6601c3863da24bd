import InsightDomain

/// The time as the daemon has measured it: the wall clock when it started plus the monotonic
/// time passed since. Unlike the wall clock it cannot jump. Retention counts from it when the
/// wall clock runs ahead of it (a clock stepped forward by a wrong NTP server or a bad RTC would
/// otherwise make every row look old and purge it), and from the wall clock otherwise (a clock
/// stepped back only purges less).
struct MeasuredTime: Sendable {
    private let clock: any Clock
    private let wallAtStart: Milliseconds
    private let monotonicAtStart: UInt64

    init(clock: any Clock) {
        self.clock = clock
        wallAtStart = clock.now()
        monotonicAtStart = clock.monotonicNanoseconds()
    }

    /// The measured time, and how far the wall clock is ahead of it (never negative).
    func now() -> (time: Milliseconds, wallAhead: Milliseconds) {
        let wall = clock.now()
        let measured = wallAtStart + Milliseconds((clock.monotonicNanoseconds() &- monotonicAtStart) / 1_000_000)
        return (min(wall, measured), max(0, wall - measured))
    }
}
