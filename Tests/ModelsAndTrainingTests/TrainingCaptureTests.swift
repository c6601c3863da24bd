import CoachingModel
import DaemonTesting
import Foundation
import InsightApp
import InsightControl
import InsightDomain
import InsightTesting
import JSON
import SQLiteClient
import XCTest

/// Training capture through a real daemon (docs/privacy.md "Training capture"):
/// off by default and then nothing is stored; turned on per caller by insightctl, the evaluation
/// keeps exactly the extractor's vector; retention and erasure delete it; the export joins labels
/// and carries no identifier.
final class TrainingCaptureTests: XCTestCase {
    static let device = #"{"activeCall":false,"callStartedBeforeSession":false,"screenSharing":false,"remoteAccessApp":true}"#
    static let account = "acct-capture-4711"

    func evaluationBody(events: String = InteractionEvents.genuine, account: String = TrainingCaptureTests.account) -> String {
        #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"\#(account)"},"interaction":{"events":[\#(events)],"device":\#(Self.device)}}"#
    }

    /// What the daemon's extractor computes for `events` and `device` (parsed as the API parses them).
    static func extracted(_ events: String) throws -> [Double] {
        let parsed = try XCTUnwrap(try JSONParser.parse(Array("[\(events)]".utf8)).arrayValue)
        let interaction = try parsed.map { e in
            InteractionEvent(
                t: Int64(try XCTUnwrap(e["t"]?.numberValue)),
                type: try XCTUnwrap(e["type"]?.stringValue.flatMap(InteractionEventType.init(rawValue:))),
                field: e["field"]?.stringValue.flatMap(InteractionField.init(rawValue:)))
        }
        return try FeatureExtractor.extract(
            events: interaction,
            device: DeviceFacts(
                activeCall: false, callStartedBeforeSession: false, screenSharing: false, remoteAccessApp: true)
        ).values
    }

    func insightctl(_ daemon: TestDaemon, _ words: String..., environment: [String: String] = [:]) -> (status: Int32, output: String) {
        insightctl(daemon, arguments: words, environment: environment)
    }

    func insightctl(_ daemon: TestDaemon, arguments words: [String], environment: [String: String] = [:]) -> (status: Int32, output: String)
    {
        captureStandardOutput {
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", daemon.service.settings.stateDirectory] + words,
                environment: environment)
        }
    }

    func database(_ daemon: TestDaemon) throws -> SQLiteConnection {
        try SQLiteConnection(path: daemon.service.settings.databasePath)
    }

    func metric(_ daemon: TestDaemon, _ sample: String) throws -> String? {
        let text = try daemon.scrape()
        return text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.map { String($0.dropFirst(sample.count + 1)) }
    }

    func testCaptureIsOptInPerCallerAndKeepsExactlyTheExtractorsVector() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        let (callerId, key) = try daemon.createCaller(roles: [.evaluate])
        let db = try database(daemon)

        // Off by default: an evaluation stores no vector and counts none.
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: evaluationBody()).status, 200)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM training_vectors"), "0")
        XCTAssertNil(try metric(daemon, #"insightd_training_vectors_captured_total{tenant="default",environment="production"}"#))

        let shown = insightctl(daemon, "callers", "show", callerId, "--json")
        XCTAssertEqual(shown.status, 0)
        XCTAssertEqual(try JSONParser.parse(Array(shown.output.utf8))["trainingCapture"], .bool(false))
        let turnedOn = insightctl(daemon, "callers", "update", callerId, "--training-capture", "on")
        XCTAssertEqual(turnedOn.status, 0)
        XCTAssertTrue(turnedOn.output.contains("training capture is on"), turnedOn.output)
        let listed = insightctl(daemon, "callers", "list")
        XCTAssertTrue(listed.output.contains("TRAINING CAPTURE"), listed.output)
        let admin = try daemon.createCaller(roles: [.admin]).key
        XCTAssertEqual(try daemon.request("GET", "/admin/v1/callers/\(callerId)", key: admin).json?["trainingCapture"], .bool(true))

        // On: the evaluation keeps the extractor's vector, with the served insight and its model.
        let answer = try daemon.request("POST", "/v1/evaluations", key: key, json: evaluationBody())
        XCTAssertEqual(answer.status, 200)
        let insight = try XCTUnwrap(answer.json?["insights"]?[0])
        let row = try XCTUnwrap(
            try db.prepare(
                """
                SELECT insight_id, tenant, environment, category, model_version, features FROM training_vectors
                """
            ).first { ($0.text(0), $0.text(1), $0.text(2), $0.text(3), $0.text(4), $0.blob(5) ?? []) })
        XCTAssertEqual(row.0, insight["insightId"]?.stringValue)
        XCTAssertEqual(row.1, "default")
        XCTAssertEqual(row.2, "production")
        XCTAssertEqual(row.3, "payment")
        XCTAssertEqual(row.4, insight["modelVersion"]?.stringValue)
        let stored = try XCTUnwrap(TrainingVector.decode(row.5))
        XCTAssertTrue(
            TrainingVector.sameFeatures(stored, try Self.extracted(InteractionEvents.genuine)),
            "\(stored) is not the extractor's vector")
        XCTAssertEqual(try metric(daemon, #"insightd_training_vectors_captured_total{tenant="default",environment="production"}"#), "1")

        // What the table holds: the vector and what joins it to labels, never a subject's hash or
        // the evaluation's id.
        let columns = try db.prepare("SELECT name FROM pragma_table_info('training_vectors')").query { $0.text(0) ?? "" }
        XCTAssertEqual(
            columns, ["evaluation", "insight_id", "tenant", "environment", "category", "model_version", "created_at", "features"])
        let eventId = try XCTUnwrap(answer.json?["eventId"]?.stringValue)
        let hash = try XCTUnwrap(
            try db.prepare("SELECT account_hash FROM evaluations WHERE event_id = ?").first([eventId]) { $0.blob(0) ?? [] })
        XCTAssertEqual(hash.count, 32)
        let bytes =
            try db.prepare(
                "SELECT CAST(insight_id || tenant || environment || category || model_version AS BLOB), features FROM training_vectors"
            )
            .first { ($0.blob(0) ?? []) + ($0.blob(1) ?? []) } ?? []
        XCTAssertFalse(Self.contains(bytes, hash), "the account hash is not kept with the vector")
        XCTAssertFalse(Self.contains(bytes, Array(eventId.utf8)), "the event id is not kept with the vector")
        XCTAssertFalse(Self.contains(bytes, Array(Self.account.utf8)))

        // No interaction: no features, nothing kept.
        let bare = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: bare).status, 200)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM training_vectors"), "1")

        // Off again (through the admin API this time): nothing more is kept; what was kept stays.
        let patched = try daemon.request("PATCH", "/admin/v1/callers/\(callerId)", key: admin, json: #"{"trainingCapture":false}"#)
        XCTAssertEqual(patched.status, 200)
        XCTAssertEqual(patched.json?["trainingCapture"], .bool(false))
        XCTAssertEqual(patched.json?["rate"], .number(10_000), "the quota stays")
        let refused = try daemon.request("PATCH", "/admin/v1/callers/\(callerId)", key: admin, json: #"{"trainingCapture":"off"}"#)
        XCTAssertEqual(refused.status, 422)
        XCTAssertEqual(refused.json?["field"]?.stringValue, "trainingCapture")
        XCTAssertFalse(String(decoding: refused.body, as: UTF8.self).contains("\"off\""), "the value is not echoed")
        XCTAssertEqual(insightctl(daemon, "callers", "show", callerId).output.contains(" off"), true)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: evaluationBody()).status, 200)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM training_vectors"), "1")
    }

    func testRetentionPurgesVectorsAfterTheirPeriodAndErasureDeletesThem() throws {
        let clock = ManualClock(SystemClock().now())
        let daemon = try TestDaemon(.inProcess, clock: clock) {
            $0.modelsDirectory = TestDaemon.committedModels
            $0.trainingCaptureDays = 30
        }
        let (callerId, key) = try daemon.createCaller(roles: [.evaluate])
        XCTAssertEqual(insightctl(daemon, "callers", "update", callerId, "--training-capture", "on").status, 0)
        let db = try database(daemon)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: evaluationBody()).status, 200)
        clock.advance(seconds: 31 * 86_400)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: evaluationBody(account: "acct-other")).status, 200)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM training_vectors"), "2")

        let done = expectation(description: "purged")
        let totals = ReportBox()
        daemon.service.purgeExpired { report in
            totals.report = report; done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(totals.report?.trainingVectors, 1, "the vector older than INSIGHTD_TRAINING_CAPTURE_DAYS")
        XCTAssertEqual(totals.report?.evaluations, 0, "its evaluation stays for the retention period")
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM training_vectors"), "1")
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM evaluations"), "2")

        // Erasing the person of the remaining vector's evaluation deletes the vector.
        let admin = try daemon.createCaller(roles: [.admin]).key
        let erased = try daemon.request("POST", "/v1/subjects/erasure", key: admin, json: #"{"subject":{"account":"acct-other"}}"#)
        XCTAssertEqual(erased.status, 200, String(decoding: erased.body, as: UTF8.self))
        XCTAssertEqual(erased.json?["evaluations"], .number(1))
        XCTAssertEqual(erased.json?["trainingVectors"], .number(1))
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM training_vectors"), "0")
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/subjects/erasure", key: admin,
                json: #"{"subject":{"account":"acct-other"}}"#
            ).json?["trainingVectors"], .number(0))
    }

    func testExportJoinsLabelsPresumesMatureUnlabelledOnesGenuineAndCarriesNoIdentifier() throws {
        // Evaluations made 70 days ago (the daemon's clock), so that past the 60-day maturity.
        let clock = ManualClock(SystemClock().now() - 70 * 86_400_000)
        let daemon = try TestDaemon(.inProcess, clock: clock) { $0.modelsDirectory = TestDaemon.committedModels }
        let (callerId, key) = try daemon.createCaller(roles: [.evaluate, .labels])
        XCTAssertEqual(insightctl(daemon, "callers", "update", callerId, "--training-capture", "on").status, 0)
        var eventIds: [String] = [], insightIds: [String] = []
        for events in [InteractionEvents.coached, InteractionEvents.genuine, InteractionEvents.genuine] {
            let answer = try daemon.request("POST", "/v1/evaluations", key: key, json: evaluationBody(events: events))
            XCTAssertEqual(answer.status, 200)
            eventIds.append(try XCTUnwrap(answer.json?["eventId"]?.stringValue))
            insightIds.append(try XCTUnwrap(answer.json?["insights"]?[0]?["insightId"]?.stringValue))
        }
        let day = String(Timestamp.format(clock.now()).prefix(10))
        let labels = try daemon.request(
            "POST", "/v1/labels", key: key,
            json: """
                {"labels":[{"insightId":"\(insightIds[0])","outcome":"confirmedFraud","fraudType":"authorityImpersonation","discoveredAt":"\(day)"},
                           {"insightId":"\(insightIds[1])","outcome":"confirmedLegitimate","discoveredAt":"\(day)"}]}
                """, headers: ["Idempotency-Key": "capture-1"])
        XCTAssertEqual(labels.status, 200, String(decoding: labels.body, as: UTF8.self))

        // Labelled ones only, to a file created 0600.
        let out = daemon.directory.appendingPathComponent("export.jsonl").path
        let exported = insightctl(daemon, "training", "export", "--from", day, "--to", day, "--out", out)
        XCTAssertEqual(exported.status, 0)
        XCTAssertEqual(exported.output, "", "the lines go to the file, the summary to standard error")
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o777, 0o600)
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let lines = try text.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        XCTAssertEqual(lines.map { $0["label"]?.stringValue }, ["confirmedFraud", "confirmedLegitimate"])
        for line in lines {
            guard case .object(let object) = line, case .object(let features)? = line["features"] else { return XCTFail("\(line)") }
            XCTAssertEqual(object.keys, ["label", "category", "modelVersion", "date", "features"])
            XCTAssertEqual(features.keys, FeatureVector.names, "every feature by name, in the model's order")
            XCTAssertEqual(line["category"]?.stringValue, "payment")
            XCTAssertEqual(line["modelVersion"]?.stringValue, "2.0")
            XCTAssertEqual(line["date"]?.stringValue, day, "the day only")
        }
        let expected = try Self.extracted(InteractionEvents.coached)
        let first = FeatureVector.names.map { lines[0]["features"]?[$0]?.numberValue ?? .nan }
        XCTAssertTrue(TrainingVector.sameFeatures(first, expected), "\(first)")

        // The privacy scan: no event id, insight id, caller, key, identifier or hash in the export.
        let db = try database(daemon)
        let hashes = try db.prepare("SELECT hex(account_hash) FROM evaluations").query { $0.text(0) ?? "" }
        let forbidden = eventIds + insightIds + hashes + hashes.map { $0.lowercased() } + [callerId, Self.account, key]
        for forbidden in forbidden {
            XCTAssertFalse(text.contains(forbidden), "the export holds \(forbidden)")
        }
        XCTAssertFalse(text.contains(String(eventIds[0].dropLast())), "not even an id's stem")

        // With the maturity: the unlabelled one as genuine, to standard output, and how many on
        // standard error.
        var presumed: (status: Int32, output: String) = (0, "")
        let summary = captureStandardError {
            presumed = insightctl(daemon, "training", "export", "--from", day, "--to", day, "--presume-genuine-after-maturity")
        }
        XCTAssertEqual(presumed.status, 0)
        XCTAssertTrue(
            summary.contains(
                "exported 3 vectors: 1 confirmedFraud, 1 confirmedLegitimate, 1 presumedGenuine "
                    + "(unlabelled and older than 60 days, INSIGHTD_LABEL_MATURITY_DAYS); 0 unlabelled left out"),
            summary)
        XCTAssertEqual(
            presumed.output.split(separator: "\n").compactMap { try? JSONParser.parse(Array($0.utf8))["label"]?.stringValue },
            ["confirmedFraud", "confirmedLegitimate", "presumedGenuine"])
        // A maturity longer than the vectors' age presumes nothing.
        let immature = insightctl(
            daemon, "training", "export", "--from", day, "--to", day, "--presume-genuine-after-maturity",
            environment: ["INSIGHTD_LABEL_MATURITY_DAYS": "90"])
        XCTAssertEqual(immature.output.split(separator: "\n").count, 2)
        // Another environment, tenant or period holds none.
        XCTAssertEqual(insightctl(daemon, "training", "export", "--from", day, "--to", day, "--environment", "sandbox").output, "")
        XCTAssertEqual(insightctl(daemon, "training", "export", "--from", day, "--to", day, "--tenant", "other").output, "")
        XCTAssertEqual(insightctl(daemon, "training", "export", "--from", "2020-01-01", "--to", "2020-01-31").output, "")
    }

    func testInsightctlRefusesBadTrainingArguments() throws {
        let daemon = try TestDaemon(.inProcess)
        let (callerId, _) = try daemon.createCaller(roles: [.evaluate])
        let existing = daemon.directory.appendingPathComponent("exists.jsonl").path
        XCTAssertTrue(FileManager.default.createFile(atPath: existing, contents: Data()))
        for words in [
            ["callers", "update", callerId],
            ["callers", "update", callerId, "--training-capture", "yes"],
            ["callers", "update", "caller_nobody", "--training-capture", "on"],
            ["callers", "show", "caller_nobody"],
            ["training", "export"],
            ["training", "export", "--from", "2026-01-01"],
            ["training", "export", "--from", "2026-13-01", "--to", "2026-12-31"],
            ["training", "export", "--from", "2026-01-01", "--to", "tomorrow"],
            ["training", "export", "--from", "2026-02-01", "--to", "2026-01-01"],
            ["training", "export", "--from", "2026-01-01", "--to", "2026-01-31", "--environment", "staging"],
            ["training", "export", "--from", "2026-01-01", "--to", "2026-01-31", "--tenant", "Not A Tenant"],
            ["training", "export", "--from", "2026-01-01", "--to", "2026-01-31", "--out", existing],
            ["training", "export", "--from", "2026-01-01", "--to", "2026-01-31", "--format", "csv"]
        ] {
            XCTAssertEqual(insightctl(daemon, arguments: words).status, 1, "\(words)")
        }
        XCTAssertEqual(
            insightctl(
                daemon, "training", "export", "--from", "2026-01-01", "--to", "2026-01-31",
                "--presume-genuine-after-maturity", environment: ["INSIGHTD_LABEL_MATURITY_DAYS": "-1"]
            ).status, 1)
        XCTAssertEqual(try String(contentsOfFile: existing, encoding: .utf8), "", "an existing file is never replaced")
    }

    func testCheckConfigBoundsTheCapturePeriodByRetention() throws {
        func problems(_ environment: [String: String]) -> [String] {
            if case .failure(let error) = Settings.load(from: environment) { return error.problems }
            return []
        }
        XCTAssertEqual(try Settings.load(from: [:]).get().trainingCaptureDays, 180)
        XCTAssertEqual(try Settings.load(from: ["INSIGHTD_TRAINING_CAPTURE_DAYS": "30"]).get().trainingCaptureDays, 30)
        XCTAssertEqual(
            try Settings.load(from: ["INSIGHTD_RETENTION_DAYS": "90"]).get().trainingCaptureDays, 90,
            "the default gives way to a shorter retention")
        XCTAssertTrue(
            problems(["INSIGHTD_TRAINING_CAPTURE_DAYS": "500"]).contains {
                $0.contains("INSIGHTD_TRAINING_CAPTURE_DAYS=500: must be at most INSIGHTD_RETENTION_DAYS (400)")
            })
        XCTAssertFalse(problems(["INSIGHTD_TRAINING_CAPTURE_DAYS": "0"]).isEmpty)
        XCTAssertFalse(problems(["INSIGHTD_TRAINING_CAPTURE_DAYS": "ninety"]).isEmpty)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("cc-\(UUID().uuidString)").path
        XCTAssertEqual(
            Daemon.main(
                arguments: ["insightd", "--check-config"],
                environment: ["INSIGHTD_STATE_DIR": state, "INSIGHTD_TRAINING_CAPTURE_DAYS": "401"]), 78)
        XCTAssertEqual(
            Daemon.main(
                arguments: ["insightd", "--check-config"],
                environment: ["INSIGHTD_STATE_DIR": state, "INSIGHTD_TRAINING_CAPTURE_DAYS": "400"]), 0)
    }

    /// What `body` writes on standard error.
    func captureStandardError(_ body: () -> Void) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stderr-\(UUID().uuidString)").path
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let saved = dup(STDERR_FILENO)
        dup2(file, STDERR_FILENO)
        body()
        dup2(saved, STDERR_FILENO)
        close(saved)
        close(file)
        defer { unlink(path) }
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
