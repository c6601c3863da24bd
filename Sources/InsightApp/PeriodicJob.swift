import Dispatch
import Synchronization

/// One piece of the daemon's upkeep that runs on a schedule (the reporting recount, the key
/// files' polling, retention, other instances' opt-outs, the store watch), each on a serial queue
/// of its own so that a slow run of one never delays another; a part of the daemon's lifecycle,
/// running from `start` until `stop`.
final class PeriodicJob: Service {
    private let name: String
    private let firstAfter: Double
    private let interval: Double
    private let work: @Sendable () -> Void
    /// The timer from `start` until `stop` (a `Mutex`: a dispatch source is not `Sendable`).
    private let timer = Mutex<DispatchSourceTimer?>(nil)

    /// Runs `work` `firstAfter` seconds after `start`, then every `interval` seconds, on a queue named `name`.
    init(_ name: String, firstAfter: Double, every interval: Double, _ work: @escaping @Sendable () -> Void) {
        self.name = name
        self.firstAfter = firstAfter
        self.interval = interval
        self.work = work
    }

    func start() {
        timer.withLock { timer in
            guard timer == nil else { return }
            let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: name))
            source.schedule(deadline: .now() + firstAfter, repeating: interval)
            source.setEventHandler(handler: work)
            source.resume()
            timer = source
        }
    }

    /// No further run starts (one in progress finishes).
    func stop() {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    deinit {
        timer.withLock { $0?.cancel() }
    }
}
