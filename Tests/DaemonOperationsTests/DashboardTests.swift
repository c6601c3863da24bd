import DaemonTesting
import Foundation
import InsightApp
import InsightDomain
import JSON
import PostgresTesting
import RedisTesting
import XCTest

/// deploy/grafana/insightd-dashboard.json against what a running daemon exports: a panel may
/// only query a metric that exists, and every `insightd_*` metric has a panel, so a metric added
/// to the code without one (or renamed under one) fails here.
final class DashboardTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The metric names the dashboard's queries use.
    func dashboardMetrics() throws -> Set<String> {
        let data = try Data(contentsOf: Self.packageRoot.appendingPathComponent("deploy/grafana/insightd-dashboard.json"))
        guard case .object(let dashboard) = try JSONParser.parse(Array(data)),
            case .array(let panels)? = dashboard["panels"]
        else {
            XCTFail("the dashboard has no panels")
            return []
        }
        let name = try NSRegularExpression(pattern: "\\b(insightd|process)_[a-z_]+")
        var names: Set<String> = []
        for case .object(let panel) in panels {
            guard case .array(let targets)? = panel["targets"] else { continue }
            for case .object(let target) in targets {
                guard case .string(let expression)? = target["expr"] else { continue }
                let range = NSRange(expression.startIndex..., in: expression)
                for match in name.matches(in: expression, range: range) {
                    names.insert(String(expression[Range(match.range, in: expression)!]))
                }
            }
        }
        return names
    }

    /// The metric families `/metrics` declares (`# TYPE name type`), with their types.
    func exportedFamilies(_ daemon: TestDaemon) throws -> [String: String] {
        let response = try daemon.metricsRequest()
        XCTAssertEqual(response.status, 200)
        var families: [String: String] = [:]
        for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let words = line.split(separator: " ")
            if words.count == 4 { families[String(words[2])] = String(words[3]) }
        }
        return families
    }

    /// A daemon of the multi-instance mode, on a fresh database of the shared test PostgreSQL and
    /// a Redis of its own: the metrics only that mode exports (the engines' state).
    func sharedModeDaemon(redis: TemporaryRedis) throws -> TestDaemon {
        let postgres = try TemporaryPostgres.shared()
        let database = try postgres.createDatabase()
        return try TestDaemon(.inProcess) { settings in
            settings.databaseURL = postgres.url(database: database)
            settings.redisURL = redis.url
            settings.hashKeyFile = (settings.stateDirectory as NSString).deletingLastPathComponent + "/hash.key"
            _ = FileManager.default.createFile(
                atPath: settings.hashKeyFile!,
                contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                attributes: [.posixPermissions: 0o600])
            // Several instances never create a signing key: the shared directory holds one already.
            let signingKeys = (settings.stateDirectory as NSString).deletingLastPathComponent + "/signing-keys"
            settings.signingKeyDirectory = signingKeys
            _ = try? SigningKeyDirectory.rotate(directory: signingKeys, now: SystemClock().now(), activateAfter: 0)
        }
    }

    func testEveryPanelQueriesAnExportedMetricAndEveryMetricHasAPanel() throws {
        let daemon = try TestDaemon(.inProcess)
        let redis = try TemporaryRedis()
        defer { redis.stop() }
        let shared = try sharedModeDaemon(redis: redis)
        // What either mode exports: the embedded one's, and the engines' of the shared one.
        let families = try exportedFamilies(daemon).merging(try exportedFamilies(shared)) { first, _ in first }
        XCTAssertNotNil(families["insightd_redis_up"], "the shared-mode daemon exports its engines' state")
        XCTAssertFalse(families.isEmpty, "no metric families exported")
        let used = try dashboardMetrics()
        // A histogram's series are its family name with _bucket, _count or _sum.
        func family(of series: String) -> String? {
            if families[series] != nil { return series }
            for suffix in ["_bucket", "_count", "_sum"] where series.hasSuffix(suffix) {
                let base = String(series.dropLast(suffix.count))
                if families[base] == "histogram" { return base }
            }
            return nil
        }
        for series in used.sorted() {
            XCTAssertNotNil(family(of: series), "the dashboard queries \(series), which insightd does not export")
        }
        let covered = Set(used.compactMap(family(of:)))
        for name in families.keys.sorted() where name.hasPrefix("insightd_") {
            XCTAssertTrue(covered.contains(name), "insightd exports \(name), which no panel of the dashboard shows")
        }
    }
}
