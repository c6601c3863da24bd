internal import Glibc
internal import Synchronization

/// Idle connections of one loop, longest idle first: the ones the server may close to make room
/// for a new connection at a limit. Each loop keeps one list of all its idle connections (for
/// `maxConnections`) and, with a per-address cap, one per address it serves (for
/// `maxConnectionsPerAddress`); an idle connection is on both.
///
/// Idle means no request in progress and no answer being written: waiting for the first byte
/// of a request (a new connection, one mid TLS handshake, a keep-alive connection between
/// requests), or lingering after an error answer. An intrusive doubly linked list through
/// `Connection.idleLinks`, so listing, unlisting and taking the oldest are O(1) and allocate
/// nothing.
///
/// The list does not own its connections: the loop's connection table does, and a connection
/// leaves its lists in `close()`, before it leaves the table, so no link outlives its target
/// (unowned links: listing and unlisting, once per request each, touch no reference count).
///
/// A list is used only on its loop's thread; `oldestSince` is also read by the other loops, to
/// find the loop holding the server's longest idle connection.
final class IdleConnections: @unchecked Sendable {
    // @unchecked: everything but `oldestSince` is used only on the loop's thread.

    /// Which of a connection's links a list threads through.
    enum Scope {
        /// Every idle connection of the loop.
        case loop
        /// The loop's idle connections from one address.
        case address
    }

    /// Links of a connection while it is listed.
    struct Links {
        unowned(unsafe) var previous: Connection?
        unowned(unsafe) var next: Connection?
        /// When the connection became idle (`IdleConnections.now()`).
        var since = 0
        var listed = false
    }

    /// A connection's links in its loop's list and in its address's.
    struct ConnectionLinks {
        var inLoop = Links()
        var inAddress = Links()

        subscript(scope: Scope) -> Links {
            get { scope == .loop ? inLoop : inAddress }
            set { if scope == .loop { inLoop = newValue } else { inAddress = newValue } }
        }
    }

    let scope: Scope
    /// Address lists: the loop's connections from the address, idle or not (the loop drops
    /// the list with the last of them).
    var members = 0
    private(set) unowned(unsafe) var oldest: Connection?
    private unowned(unsafe) var newest: Connection?
    /// When the oldest listed connection became idle; `Int.max` when none is.
    let oldestSince = Atomic<Int>(.max)

    init(_ scope: Scope) {
        self.scope = scope
    }

    /// Monotonic nanoseconds, comparable across loops.
    static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1_000_000_000 + time.tv_nsec
    }

    /// Lists `connection` as the newest idle one, idle since `since`, unless it is listed.
    func insert(_ connection: Connection, since: Int) {
        guard !connection.idleLinks[scope].listed else { return }
        connection.idleLinks[scope] = Links(previous: newest, next: nil, since: since, listed: true)
        if let newest {
            newest.idleLinks[scope].next = connection
        } else {
            oldest = connection
            oldestSince.store(since, ordering: .relaxed)
        }
        newest = connection
    }

    /// Takes `connection` off the list, if it is listed.
    func remove(_ connection: Connection) {
        let links = connection.idleLinks[scope]
        guard links.listed else { return }
        connection.idleLinks[scope] = Links()
        if let next = links.next { next.idleLinks[scope].previous = links.previous } else { newest = links.previous }
        if let previous = links.previous {
            previous.idleLinks[scope].next = links.next
        } else {
            oldest = links.next
            oldestSince.store(links.next?.idleLinks[scope].since ?? .max, ordering: .relaxed)
        }
    }
}
