public import Glibc

/// A value guarded by a pthread mutex: the lock of HTTPServer and Telemetry (the rule for
/// choosing between `Locked`, `Synchronization.Mutex` and atomics is in docs/architecture.md,
/// "House rules").
///
/// pthread rather than `Synchronization.Mutex`: on Linux the latter hands a contended lock over
/// inside the kernel (PI futex), which ThreadSanitizer cannot see, so it reports false races.
/// pthread mutexes are intercepted by TSan, so races it reports here are real, and they cost the
/// same uncontended.
///
/// `init` and `withLock` are `@inlinable` (their storage `@usableFromInline`) so that callers in
/// other modules inline the lock and the body exactly as they would a type of their own module.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is read and written only between pthread_mutex_lock and unlock.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Unchecked: the mutex already makes access exclusive; the runtime check would cost a
    // thread-local access-set insertion on every access.
    @exclusivity(unchecked) @usableFromInline var value: Value

    @inlinable
    public init(_ value: Value) {
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
    @inlinable
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
