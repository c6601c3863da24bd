internal import Glibc

/// A value guarded by a pthread mutex; used only off the hot path (series creation, registration).
///
/// pthread rather than `Synchronization.Mutex`: the latter hands a contended lock over inside the
/// kernel (PI futex), which ThreadSanitizer cannot see, so it reports false races. pthread mutexes
/// are intercepted by TSan and cost the same uncontended.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is read and written only between pthread_mutex_lock and unlock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Unchecked: the mutex already makes access exclusive; the runtime check would cost a
    // thread-local access-set insertion on every lookup.
    @exclusivity(unchecked) private var value: Value

    init(_ value: Value) {
        // Heap-allocated: a pthread mutex must not move, and Swift may move stored properties.
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
