@testable import InsightApp
import Foundation
import Synchronization
import XCTest

/// The daemon's lifecycle without a socket: parts that only write down their starts and stops.
final class ServiceGroupTests: XCTestCase {
    /// What the parts did, in order ("start store", "stop store", …).
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
        /// The parts stopped, in order.
        var stops: [String] { all.filter { $0.hasPrefix("stop ") }.map { String($0.dropFirst(5)) } }
    }

    struct Refused: Error {}

    /// A part that notes its start and stop; `failsToStart` throws from `start` instead.
    struct Recorder: Service {
        let name: String
        let journal: Journal
        var failsToStart = false

        func start() throws {
            if failsToStart { throw Refused() }
            journal.note("start \(name)")
        }

        func stop() { journal.note("stop \(name)") }
    }

    func testPartsStartInOrderAndStopInReverseOnce() throws {
        let journal = Journal()
        let group = ServiceGroup(["a", "b", "c"].map { Recorder(name: $0, journal: journal) })
        try group.start()
        XCTAssertEqual(journal.all, ["start a", "start b", "start c"])
        group.stop()
        group.stop()
        XCTAssertEqual(journal.all, ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
    }

    func testAPartTheSettingsTurnOffIsLeftOut() throws {
        let journal = Journal()
        let group = ServiceGroup([Recorder(name: "a", journal: journal), nil, Recorder(name: "c", journal: journal)])
        try group.start()
        group.stop()
        XCTAssertEqual(journal.all, ["start a", "start c", "stop c", "stop a"])
    }

    /// A start that fails stops the parts already started, in reverse, and none after it; a
    /// later stop does nothing more.
    func testAFailingStartStopsThePartsAlreadyStartedInReverse() {
        let journal = Journal()
        let group = ServiceGroup([
            Recorder(name: "a", journal: journal), Recorder(name: "b", journal: journal),
            Recorder(name: "c", journal: journal, failsToStart: true), Recorder(name: "d", journal: journal)
        ])
        XCTAssertThrowsError(try group.start()) { XCTAssertTrue($0 is Refused, "\($0)") }
        XCTAssertEqual(journal.all, ["start a", "start b", "stop b", "stop a"])
        group.stop()
        XCTAssertEqual(journal.all, ["start a", "start b", "stop b", "stop a"])
    }

    /// insightd's list: a stop ends velocity's replay and turns readiness off, then drains the API
    /// listener, and only then stops the jobs, commits what is queued and closes the store; the
    /// state directory is released last.
    func testTheDaemonDrainsBeforeTheStoreCloses() throws {
        let journal = Journal()
        func part(_ name: String) -> Recorder { Recorder(name: name, journal: journal) }
        let group = ServiceGroup.daemon(
            instanceLock: part("instance lock"), store: part("store"), sharedState: part("shared state"),
            upkeep: [part("recount"), nil, part("retention")], metricsListener: part("metrics listener"),
            apiListener: part("API listener"), readiness: part("readiness"), velocityRebuild: part("velocity rebuild"))
        try group.start()
        group.stop()
        XCTAssertEqual(
            journal.stops,
            [
                "velocity rebuild", "readiness", "API listener", "metrics listener", "retention",
                "recount", "shared state", "store", "instance lock"
            ])
        XCTAssertEqual(
            journal.all.prefix(9),
            [
                "start instance lock", "start store", "start shared state", "start recount",
                "start retention", "start metrics listener", "start API listener",
                "start readiness", "start velocity rebuild"
            ])
    }

    /// A port in use: the parts before the API listener stop again in reverse, readiness never turns on.
    func testTheDaemonStopsWhatStartedWhenItsListenerCannotBind() {
        let journal = Journal()
        func part(_ name: String) -> Recorder { Recorder(name: name, journal: journal) }
        let group = ServiceGroup.daemon(
            instanceLock: part("instance lock"), store: part("store"), sharedState: part("shared state"),
            upkeep: [part("recount")], metricsListener: nil,
            apiListener: Recorder(name: "API listener", journal: journal, failsToStart: true),
            readiness: part("readiness"), velocityRebuild: nil)
        XCTAssertThrowsError(try group.start())
        XCTAssertEqual(journal.stops, ["recount", "shared state", "store", "instance lock"])
        XCTAssertFalse(journal.all.contains("start readiness"))
    }
}

/// An upkeep job runs only between its start and its stop.
final class PeriodicJobTests: XCTestCase {
    func testAJobRunsOnlyBetweenItsStartAndItsStop() throws {
        let runs = Mutex<Int>(0)
        let job = PeriodicJob("insightd.test", firstAfter: 0, every: 0.01) { runs.withLock { $0 += 1 } }
        usleep(50_000)
        XCTAssertEqual(runs.withLock { $0 }, 0, "built is not started")
        job.start()
        let deadline = Date().addingTimeInterval(10)
        while runs.withLock({ $0 }) < 3, Date() < deadline { usleep(5_000) }
        XCTAssertGreaterThanOrEqual(runs.withLock { $0 }, 3)
        job.stop()
        usleep(20_000)  // a run in progress at the stop finishes
        let stopped = runs.withLock { $0 }
        usleep(100_000)
        XCTAssertEqual(runs.withLock { $0 }, stopped, "no run starts after the stop")
    }
}
