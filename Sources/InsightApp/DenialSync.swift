import InsightDomain
import Locking

/// With several instances on one store, picks up the opt-outs the others recorded (each instance
/// checks evaluations against its own in-memory `DenialIndex`): every
/// `INSIGHTD_COMPLIANCE_REFRESH` seconds the choices renewed since the last look, with a minute
/// of overlap for commits and clocks that lag (applying one twice changes nothing), and every
/// hour the whole list, which also drops what a look cannot see (a denial another instance
/// folded under a newer key's hash).
final class DenialSync: Sendable {
    private struct Looks {
        var last: Milliseconds
        var lastFull: Milliseconds
    }

    static let overlap: Milliseconds = 60_000
    static let fullEvery: Milliseconds = 3_600_000

    private let store: any AuthorizationStore
    private let denials: DenialIndex
    private let interval: Int
    private let clock: any Clock
    private let logger: Logger
    private let looks: Locked<Looks>
    /// The last look failed (logged once per streak of failures).
    private let failing = Locked<Bool>(false)

    /// `loadedAt`: when the index was loaded whole (at start).
    init(
        store: any AuthorizationStore, denials: DenialIndex, loadedAt: Milliseconds, interval: Int, clock: any Clock,
        logger: Logger
    ) {
        self.store = store
        self.denials = denials
        self.interval = interval
        self.clock = clock
        self.logger = logger
        looks = Locked(Looks(last: loadedAt, lastFull: loadedAt))
    }

    /// The looks' schedule: every interval, the first one interval after its start.
    func periodicJob() -> PeriodicJob {
        PeriodicJob("insightd.denials", firstAfter: Double(interval), every: Double(interval)) { self.sync() }
    }

    /// Looks now; a store that does not answer leaves the index as it is until the next look.
    func sync() {
        let now = clock.now()
        let previous = looks.withLock { $0 }
        do {
            if now - previous.lastFull >= Self.fullEvery {
                denials.load(try store.denials())
                looks.withLock { $0 = Looks(last: now, lastFull: now) }
            } else {
                denials.apply(try store.authorizations(renewedSince: previous.last - Self.overlap))
                looks.withLock { $0.last = now }
            }
            if failing.withLock({ $0 }) {
                failing.withLock { $0 = false }
                logger.info("other instances' opt-outs read again")
            }
        } catch {
            // Once per outage: the store watch already says the store is unreachable.
            guard
                !failing.withLock({
                    let was = $0; $0 = true; return was
                })
            else { return }
            logger.warning("cannot read other instances' opt-outs; trying again every refresh", [("error", .string("\(error)"))])
        }
    }
}
