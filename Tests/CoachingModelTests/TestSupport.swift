import Foundation
import XCTest

@testable import CoachingModel

/// The repository's models/ directory, found from this file (through any symlink, so the suite
/// also runs from a scratch package that links Tests/ in).
let repositoryModels: String = {
    URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("models").path
}()

/// The models the parity tests replay: the committed ones, or an operator's freshly trained
/// directory named by COACHING_PARITY_MODELS_DIR (docs/model-card.md, "Retraining").
let modelsUnderTest: String = {
    if let dir = ProcessInfo.processInfo.environment["COACHING_PARITY_MODELS_DIR"], !dir.isEmpty {
        return dir
    }
    return repositoryModels
}()

private func loadOnce(_ directory: String) -> Result<ModelRegistry, ModelLoadError> {
    do throws(ModelLoadError) {
        return .success(try ModelRegistry.load(directory: directory))
    } catch {
        return .failure(error)
    }
}

/// The registry over the committed models, loaded once for the whole suite.
let committedRegistry = loadOnce(repositoryModels)
let registryUnderTest = modelsUnderTest == repositoryModels ? committedRegistry : loadOnce(modelsUnderTest)

/// The committed models (`underTest`: the ones the parity tests replay).
func registry(underTest: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws
    -> ModelRegistry
{
    switch underTest ? registryUnderTest : committedRegistry {
    case .success(let r): return r
    case .failure(let e):
        XCTFail("models did not load: \(e)", file: file, line: line)
        throw e
    }
}

/// A fresh temporary copy of models/ to tamper with.
func temporaryModelsCopy() throws -> String {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("coaching-models-\(UUID().uuidString)")
    try FileManager.default.copyItem(atPath: repositoryModels, toPath: dir.path)
    return dir.path
}

func removeTemporary(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Shorthand for building event lists in tests.
func ev(_ t: Int64, _ type: InteractionEventType, _ field: InteractionField? = nil) -> InteractionEvent {
    InteractionEvent(t: t, type: type, field: field)
}

/// The error `extract` throws for `events`, or nil.
func extractionError(_ events: [InteractionEvent], device: DeviceFacts = DeviceFacts())
    -> FeatureExtractionError?
{
    do throws(FeatureExtractionError) {
        _ = try FeatureExtractor.extract(events: events, device: device)
        return nil
    } catch {
        return error
    }
}

/// The error `fromSummary` throws, or nil.
func summaryError(_ summary: [String: Double], device: DeviceFacts = DeviceFacts())
    -> FeatureExtractionError?
{
    do throws(FeatureExtractionError) {
        _ = try FeatureExtractor.fromSummary(summary, device: device)
        return nil
    } catch {
        return error
    }
}

/// The error loading `directory` throws, or nil.
func loadError(_ directory: String, current: String? = nil) -> ModelLoadError? {
    do throws(ModelLoadError) {
        _ = try ModelRegistry.load(directory: directory, current: current)
        return nil
    } catch {
        return error
    }
}
