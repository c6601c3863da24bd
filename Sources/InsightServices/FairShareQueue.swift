import Dispatch
import Synchronization

/// Runs long jobs of several tenants off the event loops, fairly (docs/api.md
/// "GET /admin/v1/model-performance"): at most `concurrency` jobs at once, at most one of each
/// tenant, and the tenants with jobs waiting take turns: a tenant joins the back of the line when
/// it has a job waiting and none running, so after each of its jobs the others in line go first.
/// One tenant's many jobs therefore never hold another tenant's behind them: the other's waits
/// for a free thread at most, not for the first tenant's backlog.
public final class FairShareQueue: Sendable {
    public typealias Job = @Sendable () -> Void

    private struct State {
        /// Each tenant's jobs not started yet, oldest first.
        var waiting: [String: [Job]] = [:]
        /// The tenants with jobs waiting and none running, in the order they take their turn.
        var line: [String] = []
        /// The tenants with a job running.
        var running: Set<String> = []
    }

    private let state = Mutex(State())
    private let concurrency: Int
    private let threads: DispatchQueue

    /// `concurrency`: how many jobs may run at once (at least 1).
    public init(label: String, concurrency: Int) {
        precondition(concurrency >= 1, "at least one job at a time")
        self.concurrency = concurrency
        threads = DispatchQueue(label: label, attributes: .concurrent)
    }

    /// Runs `job` for `tenant` when its turn comes.
    public func submit(tenant: String, _ job: @escaping Job) {
        state.withLock { state in
            if state.waiting[tenant, default: []].isEmpty && !state.running.contains(tenant) { state.line.append(tenant) }
            state.waiting[tenant, default: []].append(job)
        }
        startWhatMayRun()
    }

    /// Starts the next job of the tenants first in line, while threads are free.
    private func startWhatMayRun() {
        let started: [(String, Job)] = state.withLock { state in
            var started: [(String, Job)] = []
            while state.running.count < concurrency, !state.line.isEmpty {
                let tenant = state.line.removeFirst()
                let job = state.waiting[tenant]!.removeFirst()
                if state.waiting[tenant]!.isEmpty { state.waiting[tenant] = nil }
                state.running.insert(tenant)
                started.append((tenant, job))
            }
            return started
        }
        for (tenant, job) in started {
            threads.async { [self] in
                job()
                state.withLock { state in
                    state.running.remove(tenant)
                    if state.waiting[tenant] != nil { state.line.append(tenant) }
                }
                startWhatMayRun()
            }
        }
    }
}
