import DaemonTesting
import Foundation
@testable import InsightControl
import InsightDomain
import InsightTesting
import JSON
import XCTest

/// The feedback loop on simulated traffic through a real daemon (docs/operations.md
/// "Model performance"): evaluations scored by two model versions, consumption reports, labels
/// arriving weeks later on an injected clock, and the report's figures checked against counts kept
/// here, request by request.
final class ModelPerformanceLoopTests: XCTestCase {
    static let day: Int64 = 86_400_000
    /// 2027-01-10T12:00:00Z.
    static let start: Int64 = Timestamp.parseDate("2027-01-10")! + day / 2

    struct Sent {
        var category: OperationCategory
        var coached: Bool
        var eventId: String
        /// Per model version: the insight id and its value.
        var insights: [String: (id: String, value: InsightValue)]
        var consumption: ConsumptionStatus?
        var labelled: LabelOutcome?
        /// The capture kit it named (`interaction.source`): platform, kit, version.
        var source: [String]?
    }

    /// The kits the traffic names, in turn with evaluations that name none.
    static let sources: [[String]?] = [
        ["web", "insight-capture-web", "1.0.0"], nil, ["web", "insight-capture-web", "1.1.0"],
        ["ios", "insight-capture-ios", "1.0.0"]
    ]

    func testTheReportCountsWhatWasEvaluatedReportedAndLabelled() throws {
        let clock = ManualClock(Self.start)
        let daemon = try TestDaemon(.inProcess, clock: clock) {
            $0.modelsDirectory = TestDaemon.committedModels; $0.labelMaturityDays = 60
        }
        let caller = try daemon.createCaller(roles: [.evaluate, .labels])
        let admin = try daemon.createCaller(roles: [.admin])
        let otherAdmin = try daemon.createCaller(roles: [.admin], tenant: "acme")
        let sandboxAdmin = try daemon.createCaller(roles: [.admin], environment: .sandbox)
        let noCall = #"{"activeCall":false,"callStartedBeforeSession":false,"screenSharing":false,"remoteAccessApp":false}"#
        let onCall = #"{"activeCall":true,"callStartedBeforeSession":true,"screenSharing":false,"remoteAccessApp":false}"#
        let statuses: [ConsumptionStatus?] = [.usedIncreasedFriction, .usedUnchangedFriction, nil, .notUsedNotNeeded, .usedEvaluationOnly]

        // Four days of traffic (2027-01-10 to 2027-01-13), each evaluation scored by 1.0 and 2.0.
        var sent: [Sent] = []
        for day in 0..<4 {
            for i in 0..<15 {
                let n = day * 15 + i
                let coached = n % 3 == 0
                let category: OperationCategory = n % 4 == 0 ? .account : .payment
                let source = Self.sources[n % Self.sources.count]
                let sourceMember = source.map { #","source":{"platform":"\#($0[0])","kit":"\#($0[1])","version":"\#($0[2])"}"# } ?? ""
                let body =
                    #"{"operationCategory":"\#(category.rawValue)","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"1.0"},{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"2.0"}],"interaction":{"events":[\#(coached ? InteractionEvents.coached : InteractionEvents.genuine)],"device":\#(coached ? onCall : noCall)\#(sourceMember)}}"#
                let r = try daemon.request("POST", "/v1/evaluations", key: caller.key, json: body)
                XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
                let eventId = try XCTUnwrap(r.string("eventId"))
                var insights: [String: (id: String, value: InsightValue)] = [:]
                for insight in r.json?["insights"]?.arrayValue ?? [] {
                    let version = try XCTUnwrap(insight["modelVersion"]?.stringValue)
                    let value = try XCTUnwrap(insight["outcome"]?["value"]?.stringValue.flatMap(InsightValue.init(rawValue:)))
                    insights[version] = (try XCTUnwrap(insight["insightId"]?.stringValue), value)
                }
                XCTAssertEqual(Set(insights.keys), ["1.0", "2.0"])
                let status = statuses[n % statuses.count]
                if let status {
                    let used = insights["2.0"]!.id
                    let report = try daemon.request(
                        "POST", "/v1/evaluations/\(eventId)/consumption", key: caller.key,
                        json: #"{"status":"\#(status.rawValue)","insightIdsUsed":["\#(used)"]}"#)
                    XCTAssertEqual(report.status, 204, String(decoding: report.body, as: UTF8.self))
                }
                sent.append(
                    Sent(
                        category: category, coached: coached, eventId: eventId, insights: insights, consumption: status,
                        source: source))
                clock.advance(seconds: 600)
            }
            clock.advance(ms: Self.day - 15 * 600_000)
        }
        XCTAssertTrue(sent.contains { $0.insights.values.contains { $0.value == .high } }, "some sessions are flagged")
        XCTAssertTrue(sent.contains { $0.insights.values.contains { $0.value == .unknown } }, "some are not")

        // Three weeks later, investigations label most of them (one in five never is), each of
        // an evaluation's two insights alike; labels of another version's insight count for it.
        clock.advance(ms: 21 * Self.day)
        var items: [String] = []
        for index in sent.indices where index % 5 != 4 {
            let outcome: LabelOutcome = sent[index].coached ? .confirmedFraud : .confirmedLegitimate
            sent[index].labelled = outcome
            for insight in sent[index].insights.values {
                let fraudType = outcome == .confirmedFraud ? #","fraudType":"authorityImpersonation""# : ""
                items.append(
                    #"{"insightId":"\#(insight.id)","outcome":"\#(outcome.rawValue)"\#(fraudType),"discoveredAt":"\#(Timestamp.format(clock.now()).prefix(10))"}"#
                )
            }
        }
        let labels = try daemon.request(
            "POST", "/v1/labels", key: caller.key, json: #"{"labels":[\#(items.joined(separator: ","))]}"#,
            headers: ["Idempotency-Key": "loop"])
        XCTAssertEqual(labels.status, 200, String(decoding: labels.body, as: UTF8.self))

        // The period is younger than the maturity: every evaluation is immature.
        let path = "/admin/v1/model-performance?environment=production&from=2027-01-10&to=2027-01-13"
        var report = try daemon.request("GET", path, key: admin.key)
        XCTAssertEqual(report.status, 200, String(decoding: report.body, as: UTF8.self))
        try check(report.json, against: sent, matureShare: 0, mature: false)
        XCTAssertEqual(
            try openAPISchemaErrors(try XCTUnwrap(report.json), schema: "ModelPerformance"), [],
            "the report as openapi.json describes it")
        // insightctl models report prints each capture kit's row under its version's.
        let table = ModelCommands.renderModelPerformance(try XCTUnwrap(report.json)).split(separator: "\n").map(String.init)
        let kitRows = table.filter { $0.hasPrefix(" ") }
        XCTAssertEqual(kitRows.count, 2 * (1 + 3), table.joined(separator: "\n"))  // per version: account has one kit, payment three
        XCTAssertTrue(kitRows.allSatisfy { $0.dropFirst(17).hasPrefix("· ") }, table.joined(separator: "\n"))
        XCTAssertTrue(table.contains { $0.contains("· web insight-capture-web 1.1.0") }, table.joined(separator: "\n"))
        XCTAssertTrue(table.contains { $0.contains("· no source") }, table.joined(separator: "\n"))

        // One category only.
        report = try daemon.request("GET", path + "&category=account", key: admin.key)
        try check(report.json, against: sent.filter { $0.category == .account }, matureShare: 0, mature: false)

        // Another tenant's admin sees none of it; the sandbox holds none of it.
        report = try daemon.request("GET", path, key: otherAdmin.key)
        XCTAssertEqual(report.json?["versions"]?.arrayValue?.count, 0)
        // A production admin key reads production only; the tenant's sandbox admin finds nothing there.
        let sandboxPath = path.replacingOccurrences(of: "production", with: "sandbox")
        XCTAssertEqual(try daemon.request("GET", sandboxPath, key: admin.key).status, 403)
        report = try daemon.request("GET", sandboxPath, key: sandboxAdmin.key)
        XCTAssertEqual(report.json?["versions"]?.arrayValue?.count, 0)

        // 60 days after the period's last day has ended, it is mature: the same figures, all mature.
        clock.advance(ms: Timestamp.parseDate("2027-01-14")! + 60 * Self.day - clock.now())
        report = try daemon.request("GET", path, key: admin.key)
        try check(report.json, against: sent, matureShare: 1, mature: true)
        // A millisecond before, the last evaluations are not yet.
        clock.advance(ms: -1)
        report = try daemon.request("GET", path, key: admin.key)
        XCTAssertEqual(report.json?["mature"], .bool(false))
    }

    /// Compares a report with counts made here from what was sent.
    func check(
        _ json: JSONValue?, against sent: [Sent], matureShare: Double, mature: Bool,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let json = try XCTUnwrap(json, file: file, line: line)
        XCTAssertEqual(json["mature"], .bool(mature), file: file, line: line)
        let rows = try XCTUnwrap(json["versions"]?.arrayValue, file: file, line: line)
        var expectedRows = 0
        for version in ["1.0", "2.0"] {
            for category in OperationCategory.allCases {
                let mine = sent.filter { $0.category == category }
                guard !mine.isEmpty else { continue }
                expectedRows += 1
                let context = "\(version) \(category.rawValue)"
                let row = try XCTUnwrap(
                    rows.first { $0["modelVersion"]?.stringValue == version && $0["category"]?.stringValue == category.rawValue },
                    context, file: file, line: line)
                try checkFigures(row, of: mine, version: version, matureShare: matureShare, context, file: file, line: line)
                // The same figures per capture kit, most evaluations first.
                let bySource = try XCTUnwrap(row["bySource"]?.arrayValue, context, file: file, line: line)
                let kits = Set(mine.map { $0.source?.joined(separator: " ") ?? "-" })
                XCTAssertEqual(bySource.count, kits.count, context, file: file, line: line)
                XCTAssertEqual(
                    bySource.map { $0["evaluations"]?.numberValue ?? 0 },
                    bySource.map { $0["evaluations"]?.numberValue ?? 0 }.sorted(by: >),
                    context, file: file, line: line)
                for entry in bySource {
                    let source = [entry["platform"], entry["kit"], entry["kitVersion"]].map { $0?.stringValue }
                    let kit = source.contains(nil) ? nil : source.compactMap { $0 }
                    XCTAssertTrue(source.allSatisfy { $0 == nil } || kit != nil, "\(context) \(source)", file: file, line: line)
                    try checkFigures(
                        entry, of: mine.filter { $0.source == kit }, version: version, matureShare: matureShare,
                        "\(context) \(kit?.joined(separator: " ") ?? "no source")", file: file, line: line)
                }
            }
        }
        XCTAssertEqual(rows.count, expectedRows, file: file, line: line)
    }

    /// Compares one row's figures (or one capture kit's) with counts made from `mine` for `version`.
    func checkFigures(
        _ row: JSONValue, of mine: [Sent], version: String, matureShare: Double, _ context: String,
        file: StaticString, line: UInt
    ) throws {
        func count(_ include: (Sent, InsightValue) -> Bool) -> Double {
            Double(mine.filter { include($0, $0.insights[version]!.value) }.count)
        }
        XCTAssertEqual(row["evaluations"]?.numberValue, Double(mine.count), context, file: file, line: line)
        for value in InsightValue.allCases {
            XCTAssertEqual(
                row["values"]?[value.rawValue]?.numberValue, count { $1 == value }, "\(context) \(value)", file: file, line: line)
            for outcome in LabelOutcome.allCases {
                XCTAssertEqual(
                    row["labelled"]?[outcome.rawValue]?[value.rawValue]?.numberValue,
                    count { $0.labelled == outcome && $1 == value }, "\(context) \(outcome) \(value)", file: file, line: line)
            }
        }
        for status in ConsumptionStatus.allCases {
            XCTAssertEqual(
                row["consumption"]?[status.rawValue]?.numberValue, count { s, _ in s.consumption == status },
                "\(context) \(status)", file: file, line: line)
        }
        XCTAssertEqual(
            row["consumption"]?["notReported"]?.numberValue, count { s, _ in s.consumption == nil },
            context, file: file, line: line)
        let flagged = { (v: InsightValue) in v == .medium || v == .high }
        let labelledFlagged = count { $0.labelled != nil && flagged($1) },
            fraudFlagged = count { $0.labelled == .confirmedFraud && flagged($1) }
        let labelledHigh = count { $0.labelled != nil && $1 == .high }, fraudHigh = count { $0.labelled == .confirmedFraud && $1 == .high }
        let fraud = count { s, _ in s.labelled == .confirmedFraud }
        try checkProportion(
            row["precision"]?["mediumOrHigh"], fraudFlagged, labelledFlagged, "\(context) precision m|h", file: file, line: line)
        try checkProportion(row["precision"]?["high"], fraudHigh, labelledHigh, "\(context) precision h", file: file, line: line)
        try checkProportion(row["recall"]?["mediumOrHigh"], fraudFlagged, fraud, "\(context) recall m|h", file: file, line: line)
        try checkProportion(row["recall"]?["high"], fraudHigh, fraud, "\(context) recall h", file: file, line: line)
        XCTAssertEqual(row["matureShare"]?.numberValue, matureShare, context, file: file, line: line)
    }

    func checkProportion(
        _ json: JSONValue?, _ successes: Double, _ sample: Double, _ context: String,
        file: StaticString, line: UInt
    ) throws {
        let json = try XCTUnwrap(json, context, file: file, line: line)
        XCTAssertEqual(json["successes"]?.numberValue, successes, context, file: file, line: line)
        XCTAssertEqual(json["sample"]?.numberValue, sample, context, file: file, line: line)
        guard sample > 0 else {
            XCTAssertEqual(json["value"], .null, context, file: file, line: line)
            XCTAssertEqual(json["interval"], .null, context, file: file, line: line)
            return
        }
        let value = successes / sample
        XCTAssertEqual(
            try XCTUnwrap(json["value"]?.numberValue, context, file: file, line: line), value, accuracy: 1e-12, context, file: file,
            line: line)
        let low = try XCTUnwrap(json["interval"]?["low"]?.numberValue, context, file: file, line: line)
        let high = try XCTUnwrap(json["interval"]?["high"]?.numberValue, context, file: file, line: line)
        XCTAssertTrue(
            low <= value && value <= high && low >= 0 && high <= 1, "\(context): \(low) ≤ \(value) ≤ \(high)", file: file, line: line)
    }
}
