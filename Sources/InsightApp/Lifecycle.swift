import HTTPServer
import InsightAPI
import Locking
import Synchronization

/// One part of the daemon that runs between a start and a stop: the store, the shared state,
/// an upkeep job, a listener. Built whole before anything starts (building may throw; starting
/// only what cannot be known before, like a port in use).
protocol Service: Sendable {
    /// Starts it; a throw means it did not start (and needs no stop).
    func start() throws
    /// Stops it, waiting for what it must finish first. Called once, and only after `start` returned.
    func stop()
}

/// The daemon's parts in one ordered list (as swift-service-lifecycle's `ServiceGroup`, here
/// synchronous): `start` starts them in order, `stop` stops those started in reverse order, so
/// that a part never outlives what it uses. A start that fails stops the parts already started,
/// in reverse, and rethrows.
final class ServiceGroup: Sendable {
    private let services: [any Service]
    /// How many of `services` (from the first) have started.
    private let started = Locked<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// `services` in start order; nil entries (parts the settings turn off) are left out.
    init(_ services: [(any Service)?]) {
        self.services = services.compactMap { $0 }
    }

    /// Starts each part in order; when one throws, stops the parts already started (in reverse)
    /// and rethrows its error.
    func start() throws {
        for service in services {
            do { try service.start() } catch {
                stop()
                throw error
            }
            started.withLock { $0 += 1 }
        }
    }

    /// Stops the started parts in reverse order; only the first call does anything.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let count = started.withLock { $0 }
        for service in services.prefix(count).reversed() { service.stop() }
    }
}

extension ServiceGroup {
    /// insightd's parts in start order: each uses only parts before it. Velocity's replay starts
    /// once `/readyz` is ready, beside traffic. A stop runs the list backwards, and that is the
    /// drain: velocity's replay ends after its batch, `/readyz` turns 503 (balancers look
    /// elsewhere), the API listener stops accepting and lets in-flight requests finish, the
    /// metrics listener closes, the upkeep jobs end, the Redis link answers what is queued, the
    /// writer commits what is queued and the store closes, and last the state directory is released.
    static func daemon(
        instanceLock: any Service, store: any Service, sharedState: any Service,
        upkeep: [(any Service)?], metricsListener: (any Service)?, apiListener: any Service,
        readiness: any Service, velocityRebuild: (any Service)?
    ) -> ServiceGroup {
        ServiceGroup([instanceLock, store, sharedState] + upkeep + [metricsListener, apiListener, readiness, velocityRebuild])
    }
}

/// An HTTP listener as a part of the daemon: `start` binds its port; `stop` is the drain — the
/// port closes, requests in flight finish (up to `drainTimeout` seconds), then the connections close.
struct Listener: Service {
    let server: HTTPServer
    let drainTimeout: Double
    /// Names the listener in the error of a start that fails (nil: the server's error as it is).
    var name: String? = nil

    func start() throws {
        do { try server.start() } catch {
            guard let name else { throw error }
            throw AppError("\(name): \(error)")
        }
    }

    func stop() { server.shutdown(timeout: drainTimeout) }
}

/// `/readyz`: ready once everything before it started; not ready first thing in a stop.
extension Readiness: Service {
    func start() { set(true) }
    func stop() { set(false) }
}

/// The lock is taken when the daemon is built, before the store is opened, so that a second
/// daemon on the state directory never touches its database; it is released last.
extension InstanceLock: Service {
    func start() {}
    func stop() { release() }
}
