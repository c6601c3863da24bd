// Fuzz target: the JSON parser, the writer round trip, the evaluation request decoder, feature
// extraction and the model. Input: any bytes, taken as a request body.
// Invariants: nothing crashes; whatever parses writes back to JSON that parses to the same
// value; decoding straight from the bytes (the whole body, or its events and summaries) answers as
// decoding the tree does;
// a decoded request's events or summary yield features and an assessment with a score in [0, 1].
import CoachingModel
import Foundation
@testable import InsightAPI
import InsightServices
import JSON

private let registry = try? ModelRegistry.load(directory: ProcessInfo.processInfo.environment["INSIGHTD_MODELS_DIR"] ?? "models")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Reading the body (or its events and summaries) straight from the bytes must answer exactly
    // as the tree does: the same request, or the same problem.
    let fromTree = Result { () throws(Problem) in try EvaluationRequest.decode(try Problem.parseBody(bytes)) }
    let fromBytes = Result { () throws(Problem) in try EvaluationRequest.decode(body: bytes) }
    switch (fromTree, fromBytes) {
    case (.success(let a), .success(let b)):
        precondition(describe(a.interaction) == describe(b.interaction), "the interaction read from bytes differs from the tree's")
        // The rest of the request (a summary's bookkeeping differs by path, and is compared above
        // by what it holds).
        var restA = a, restB = b
        restA.interaction = .none
        restB.interaction = .none
        precondition(String(describing: restA) == String(describing: restB), "the request read from bytes differs from the tree's")
    case (.failure(let a), .failure(let b)):
        precondition(a == b, "the byte reader answered \(b) where the tree answered \(a)")
    default:
        preconditionFailure("the byte reader and the tree disagree: \(fromTree) vs \(fromBytes)")
    }
    guard let value = try? JSONParser.parse(bytes) else { return 0 }
    let written = JSONWriter.bytes(value)
    guard let again = try? JSONParser.parse(written) else {
        fatalError("JSONWriter output does not parse: \(String(decoding: written, as: UTF8.self))")
    }
    precondition(again == value, "JSON round trip changed the value")
    guard let request = try? EvaluationRequest.decode(value) else { return 0 }
    let features: FeatureVector?
    switch request.interaction {
    case .none: features = nil
    case .events(let events, let device): features = try? FeatureExtractor.extract(events: events, device: device)
    case .summary(let summary, let device): features = try? FeatureExtractor.fromSummary(summary, device: device)
    }
    if let features, let registry {
        for version in registry.versions {
            let assessment = version.assess(features, category: request.category.rawValue)
            precondition(assessment.score >= 0 && assessment.score <= 1, "score \(assessment.score) outside [0, 1]")
        }
    }
    return 0
}

private func describe(_ interaction: InteractionInput) -> String {
    switch interaction {
    case .none: return "none"
    case .events(let events, let device): return "\(events) \(device)"
    case .summary(let summary, let device):
        return "\(summary.features.map { "\($0.0.name)=\($0.1.bitPattern)" }) \(summary.unknown.map { "\($0.name)@\($0.position)" } ?? "-") \(device)"
    }
}
