// Benchmarks of the CPU work of one evaluation on its loop thread: parse the body, extract
// features, run the model, hash the subject, render the answer.
import CoachingModel
import Crypto
import InsightDomain
import JSON

enum RequestPathBenchmarks {
    static func json() throws -> [MicroBenchmark] {
        let events150 = SessionGenerator.events(count: 150)
        let eventsBody = Array(SessionGenerator.eventsBody(events150, id: "00000042").utf8)
        let summaryBody = Array(
            SessionGenerator.summaryBody(
                try SessionGenerator.summary(of: events150), id: "00000042"
            ).utf8)
        let response = sampleResponse()
        // A hostile body: one object of 40,000 different names (the duplicate check must stay
        // linear in the body's size).
        let members40000 = Array(("{" + (0..<40_000).map { "\"k\($0)\":0" }.joined(separator: ",") + "}").utf8)
        return [
            MicroBenchmark(
                name: "json.parse.events150",
                note: "JSONParser.parse of the W1 body (150 events, \(kb(eventsBody.count)))"
            ) { o in
                try measure("json.parse.events150", "", o) {
                    guard case .object(let root) = try JSONParser.parse(eventsBody) else { return 0 }
                    return root.members.count
                }
            },
            MicroBenchmark(
                name: "json.parse.summary",
                note: "JSONParser.parse of the W2 body (summary, \(kb(summaryBody.count)))"
            ) { o in
                try measure("json.parse.summary", "", o) {
                    guard case .object(let root) = try JSONParser.parse(summaryBody) else { return 0 }
                    return root.members.count
                }
            },
            MicroBenchmark(
                name: "json.refuse.members40000",
                note: "JSONParser.parse of a 40,000-member object (\(kb(members40000.count))): refused at member 257"
            ) { o in
                measure("json.refuse.members40000", "", o) {
                    do throws(JSONParseError) { return try JSONParser.parse(members40000).objectValue?.members.count ?? 0 } catch {
                        return error.offset
                    }
                }
            },
            MicroBenchmark(
                name: "json.parse.members40000",
                note: "the same object parsed whole (limits .trusted): names checked through a set"
            ) { o in
                try measure("json.parse.members40000", "", o) {
                    try JSONParser.parse(members40000, limits: .trusted).objectValue?.members.count ?? 0
                }
            },
            MicroBenchmark(
                name: "json.write.response",
                note: "JSONWriter.bytes of a 1-insight evaluation answer (\(kb(JSONWriter.bytes(response).count)))"
            ) { o in
                measure("json.write.response", "", o) { JSONWriter.bytes(response).count }
            }
        ]
    }

    /// The models and sessions of the model benchmarks, made on first use so that a filtered
    /// run (`--filter json`) neither loads nor profiles them.
    final class ModelFixtures {
        let directory: String
        init(directory: String) { self.directory = directory }
        private var loaded: CoachingModelVersion?
        func model() throws -> CoachingModelVersion {
            if let loaded { return loaded }
            let registry = try ModelRegistry.load(directory: directory)
            guard let model = registry.model(version: nil) else {
                throw BenchError("no current model in \(directory)")
            }
            loaded = model
            return model
        }
    }

    static func model(_ options: RunOptions) -> [MicroBenchmark] {
        let fixtures = ModelFixtures(directory: options.modelsDirectory)
        let device = SessionGenerator.device
        var out: [MicroBenchmark] = []
        for count in [100, 150, 1000] {
            let name = "model.events\(count)"
            out.append(
                MicroBenchmark(name: "\(name).extract", note: "FeatureExtractor.extract, \(count) events") { o in
                    let events = SessionGenerator.events(count: count)
                    return try measure("\(name).extract", "", o) {
                        Int(try FeatureExtractor.extract(events: events, device: device)[.keystrokeCount])
                    }
                })
            out.append(
                MicroBenchmark(name: "\(name).assess", note: "CoachingModelVersion.assess, \(count)-event features") { o in
                    let model = try fixtures.model()
                    let vector = try FeatureExtractor.extract(events: SessionGenerator.events(count: count), device: device)
                    let level = model.assess(vector, category: "payment").level
                    var m = measure("\(name).assess", "", o) { model.assess(vector, category: "payment").reasons.count }
                    m.note = "model \(model.version) assess (\(model.treeCount) trees; answers \(level.rawValue))"
                    return m
                })
            out.append(
                MicroBenchmark(
                    name: "\(name).extract+assess",
                    note: "feature extraction + inference per evaluation, \(count) events"
                ) { o in
                    let model = try fixtures.model()
                    let events = SessionGenerator.events(count: count)
                    return try measure("\(name).extract+assess", "", o) {
                        let v = try FeatureExtractor.extract(events: events, device: device)
                        return model.assess(v, category: "payment").reasons.count
                    }
                })
        }
        out.append(
            MicroBenchmark(
                name: "model.events150.shadow",
                note:
                    "one shadow version on the request path: its answer to the evaluation's 150-event features (assess with its score bin, the made id, the record)"
            ) { o in
                let registry = try ModelRegistry.load(directory: options.modelsDirectory, shadow: ["1.0"])
                guard let shadow = registry.shadows.first else { throw BenchError("no shadow version 1.0 in \(options.modelsDirectory)") }
                let vector = try FeatureExtractor.extract(events: SessionGenerator.events(count: 150), device: device)
                let eventId = EvaluationIdentifiers.make(insights: 1, milliseconds: 1_798_000_000_000).eventId
                var m = measure("model.events150.shadow", "", o) {
                    let assessment = shadow.assess(vector, category: "payment")
                    let record = InsightRecord(
                        insightId: EvaluationIdentifiers.insightId(eventId: eventId, position: EvaluationRecord.maxServedInsights) ?? "",
                        type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: shadow.version,
                        newestModelVersion: registry.currentVersion,
                        outcome: .value(.unknown, reasons: assessment.reasons), scoreBin: assessment.scoreBin)
                    return record.insightId.utf8.count + (record.scoreBin ?? 0)
                }
                m.note =
                    "shadow \(shadow.version) (\(shadow.treeCount) trees) beside current \(registry.currentVersion), 150-event features"
                return m
            })
        out.append(
            MicroBenchmark(
                name: "model.varied.assess",
                note: "CoachingModelVersion.assess, 256 different 150-event sessions in turn"
            ) { o in
                // One session assessed over and over takes the same paths through every tree, which
                // a branch predictor learns; callers' sessions differ, so this one cycles through many.
                let model = try fixtures.model()
                let vectors = try (0..<256).map { seed in
                    try FeatureExtractor.extract(
                        events: SessionGenerator.events(count: 150, seed: UInt64(seed) &+ 1),
                        device: device)
                }
                var next = 0
                return measure("model.varied.assess", "", o) {
                    next = (next &+ 1) & 255
                    return model.assess(vectors[next], category: "payment").reasons.count
                }
            })
        out.append(
            MicroBenchmark(
                name: "model.summary.fromSummary+assess",
                note: "FeatureExtractor.fromSummary + assess (the W2 path)"
            ) { o in
                let model = try fixtures.model()
                let summary = Dictionary(
                    uniqueKeysWithValues: try SessionGenerator.summary(
                        of: SessionGenerator.events(count: 150)))
                return try measure("model.summary.fromSummary+assess", "", o) {
                    let v = try FeatureExtractor.fromSummary(summary, device: device)
                    return model.assess(v, category: "payment").reasons.count
                }
            })
        return out
    }

    static func crypto() throws -> [MicroBenchmark] {
        let hasher = try SubjectHasher(key: Array(repeating: 0x5A, count: 32))
        return [
            MicroBenchmark(name: "crypto.hmac.subject3", note: "SubjectHasher.hash of account, device, counterparty") { o in
                var n = 0
                return measure("crypto.hmac.subject3", "", o) {
                    n &+= 1
                    let id = String(n)
                    return hasher.hash("acct-" + id, kind: .account).count
                        &+ hasher.hash("dev-" + id, kind: .device).count
                        &+ hasher.hash("payee-" + id, kind: .counterparty).count
                }
            },
            MicroBenchmark(name: "crypto.uuid2", note: "SecureRandom.uuid twice (event id + insight id)") { o in
                measure("crypto.uuid2", "", o) { SecureRandom.uuid().utf8.count &+ SecureRandom.uuid().utf8.count }
            },
            MicroBenchmark(name: "crypto.receipt.leaf", note: "an answer's leaf hash, SHA-256(0x00 || body): every answer") { o in
                let body = JSONWriter.bytes(sampleResponse())
                return measure("crypto.receipt.leaf", "\(body.count)-byte body", o) { MerkleTree.leafHash(of: body).count }
            },
            MicroBenchmark(
                name: "crypto.receipt.head1",
                note: "a batch of one answer: its tree, the head's payload, Ed25519 (libsodium), the JWS"
            ) { o in
                let issuer = ReceiptIssuer.withEphemeralKey(instance: "bench")
                let leaves = [MerkleTree.leafHash(of: JSONWriter.bytes(sampleResponse()))]
                return measure("crypto.receipt.head1", "1 leaf", o) { issuer.issue(leafHashes: leaves)?.head.jws.utf8.count ?? 0 }
            },
            MicroBenchmark(
                name: "crypto.receipt.head64",
                note: "a batch of 64 answers: the tree, the signed head, and every answer's audit path"
            ) { o in
                let issuer = ReceiptIssuer.withEphemeralKey(instance: "bench")
                let leaves = (0..<64).map { MerkleTree.leafHash(of: [UInt8(truncatingIfNeeded: $0)]) }
                return measure("crypto.receipt.head64", "64 leaves", o) {
                    guard let batch = issuer.issue(leafHashes: leaves) else { return 0 }
                    return (0..<64).reduce(0) { $0 &+ batch.receipt(at: $1).path.count }
                }
            }
        ]
    }

    private static func kb(_ bytes: Int) -> String { "\(fixed(Double(bytes) / 1024, 1)) KiB" }

    /// An answer shaped like the one `EvaluationAnswer` writes (Sources/InsightAPI/EvaluateEndpoint.swift).
    private static func sampleResponse() -> JSONValue {
        var insight = JSONObject()
        insight.append("insightId", .string("2f0b7e8c-9a41-4d36-8f1e-0c6b5d2a9e17"))
        insight.append("type", .string("isLikelyBeingCoached"))
        insight.append("schemaVersion", .number(1))
        insight.append("modelVersion", .string("2.0"))
        insight.append("newestModelVersion", .string("2.0"))
        insight.append("isUsingCurrentModel", .bool(true))
        insight.append("outcome", .object(["value": .string("high")]))
        insight.append(
            "reasons",
            .array([
                .string("activeCallDuringSession"), .string("segmentedTyping"),
                .string("pastedPayee")
            ]))
        var root = JSONObject()
        root.append("eventId", .string("8d3c1f5e-27b4-4a9c-b1d0-6e2f7a8c4b53"))
        root.append("requestId", .string("bench-00000042"))
        root.append("environment", .string("production"))
        root.append("serverTimestamp", .string(Timestamp.format(1_798_000_000_000)))
        root.append("reportConsumptionBy", .string(Timestamp.format(1_798_000_900_000)))
        root.append("insights", .array([.object(insight)]))
        return .object(root)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
