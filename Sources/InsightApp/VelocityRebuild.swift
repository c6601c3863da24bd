import Dispatch
import Foundation
import InsightDomain
import Synchronization
import Telemetry

/// Rebuilds velocity's counts from the store's last 7 days while the daemon serves: `init` notes
/// where the stored evaluations end and empties the tracker (before any evaluation can be made),
/// `start` replays the evaluations stored up to there one bounded batch at a time on a thread
/// of its own, and live evaluations are recorded beside it (`VelocityTracker.beginRebuild`).
/// Escalation by velocity stays off until the replay is done (`VelocityTracker.isRebuilding`).
/// A batch the store fails to read is retried after a pause, from where it stood.
final class VelocityRebuild: Service {
    /// Evaluations per batch: a batch is all a replay holds beside the tracker (about a MB;
    /// larger ones fall out of the CPU caches and replay slower).
    static let defaultBatchSize = 4096

    private let history: any VelocityHistory
    private let velocity: VelocityTracker
    private let logger: Logger
    private let since: Milliseconds
    private let end: VelocityHistoryEnd
    private let batchSize: Int
    private let retryPause: Double
    private let replayed = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// Signalled by `stop` to cut a retry pause short.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled once the replay thread has returned (or at once when it never started).
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    init(
        history: any VelocityHistory, velocity: VelocityTracker, clock: any Clock, logger: Logger,
        batchSize: Int = VelocityRebuild.defaultBatchSize, retryPause: Double = 1
    ) throws {
        self.history = history
        self.velocity = velocity
        self.logger = logger
        self.batchSize = batchSize
        self.retryPause = retryPause
        since = clock.now() - VelocityWindow.week.milliseconds
        end = try history.velocityHistoryEnd()
        velocity.beginRebuild()
    }

    /// Evaluations replayed so far.
    var replayedEvaluations: Int { replayed.load(ordering: .relaxed) }

    /// Registers `insightd_velocity_ready` and `insightd_velocity_replayed_evaluations`.
    func register(on metrics: MetricsRegistry) {
        let velocity = self.velocity
        metrics.collect(
            "insightd_velocity_ready",
            help:
                "1 once velocity's counts are rebuilt from the store after a start (escalation by velocity is on), 0 while they are being rebuilt.",
            type: .gauge
        ) { [(labels: [], value: velocity.isRebuilding ? 0 : 1)] }
        metrics.collect(
            "insightd_velocity_replayed_evaluations",
            help: "Stored evaluations replayed into velocity's counts since start.",
            type: .gauge
        ) { [(labels: [], value: Double(self.replayedEvaluations))] }
    }

    /// Starts the replay on its own thread.
    func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            replay()
            finished.signal()
        }
        thread.name = "insightd.velocity-rebuild"
        thread.start()
    }

    /// Stops the replay after its current batch and waits for it (velocity stays rebuilding).
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        if started.load(ordering: .acquiring) { finished.wait() }
    }

    private func replay() {
        let begin = DispatchTime.now()
        var cursor: VelocityHistoryCursor? = .from(since)
        while let position = cursor, !stopping.load(ordering: .acquiring) {
            do {
                let batch = try history.velocityEvents(after: position, through: end, limit: batchSize)
                for event in batch.events { velocity.record(event) }
                replayed.add(batch.events.count, ordering: .relaxed)
                cursor = batch.next
            } catch {
                logger.error(
                    "velocity rebuild: reading the store failed; retrying",
                    [("error", .string("\(error)")), ("retryInSeconds", .number(retryPause))])
                _ = wake.wait(timeout: .now() + retryPause)
            }
        }
        guard cursor == nil else { return }
        velocity.finishRebuild()
        let ms = Double((DispatchTime.now().uptimeNanoseconds - begin.uptimeNanoseconds) / 1_000_000)
        logger.info(
            "velocity rebuilt",
            [
                ("evaluations", .number(Double(replayedEvaluations))),
                ("subjects", .number(Double(velocity.trackedSubjects))),
                ("ms", .number(ms))
            ])
    }
}
