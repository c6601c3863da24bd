import Dispatch

/// One piece of the daemon's upkeep that runs on a schedule (the reporting recount, the hash key
/// file's polling, retention), each on a serial queue of its own so that a slow run of one never
/// delays another, from `start` until `stop`.
final class PeriodicJob: @unchecked Sendable {
    // @unchecked: `timer` is set once in init and only used through DispatchSource's own
    // thread-safe calls (resume, cancel).
    private let timer: DispatchSourceTimer

    /// Runs `work` `firstAfter` seconds from now, then every `interval` seconds, on a queue named `name`.
    init(_ name: String, firstAfter: Double, every interval: Double, _ work: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: name))
        timer.schedule(deadline: .now() + firstAfter, repeating: interval)
        timer.setEventHandler(handler: work)
        timer.resume()
    }

    /// No further run starts (one in progress finishes).
    func stop() {
        timer.cancel()
    }

    deinit {
        timer.cancel()
    }
}
