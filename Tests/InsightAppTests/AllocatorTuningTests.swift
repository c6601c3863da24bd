@testable import InsightApp
import XCTest

/// The daemon's own re-execution under a larger thread cache is checked end to end by
/// tests/e2e.sh (it reads the running daemon's environment); these pin how the tunable joins an
/// operator's.
final class AllocatorTuningTests: XCTestCase {
    func testTheThreadCacheSizeIsAddedWhenNoTunablesAreSet() {
        XCTAssertEqual(AllocatorTuning.tunables(in: [:]), "glibc.malloc.tcache_count=128")
        XCTAssertEqual(AllocatorTuning.tunables(in: ["GLIBC_TUNABLES": ""]), "glibc.malloc.tcache_count=128")
    }

    func testTheOperatorsOtherTunablesAreKept() {
        XCTAssertEqual(
            AllocatorTuning.tunables(in: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=2"]),
            "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=128")
    }

    func testAThreadCacheSizeAlreadySetIsLeftAloneAndNothingIsReexecuted() {
        // Set by the operator, or by the first execution: no second one.
        XCTAssertNil(AllocatorTuning.tunables(in: ["GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"]))
        XCTAssertNil(
            AllocatorTuning.tunables(
                in: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=128"]))
        // A longer name that merely starts alike is another tunable.
        XCTAssertEqual(
            AllocatorTuning.tunables(in: ["GLIBC_TUNABLES": "glibc.malloc.tcache_count_x=1"]),
            "glibc.malloc.tcache_count_x=1:glibc.malloc.tcache_count=128")
    }
}
