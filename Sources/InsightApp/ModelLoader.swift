import CoachingModel
import Foundation
import InsightServices

/// Loads the model versions from the models directory into `InsightModels`: at start and on
/// SIGHUP, swapped in without dropping a request. A missing default directory leaves insights
/// unavailable; anything malformed is an error and keeps the models in use.
struct ModelLoader: Sendable {
    let models: InsightModels
    let directory: String
    /// Whether the operator named the directory (then it must exist).
    let explicit: Bool
    let current: String?
    /// `INSIGHTD_MODEL_SHADOW`: checked against the directory at every load.
    let shadow: [String]
    let logger: Logger

    func reload() throws {
        guard FileManager.default.fileExists(atPath: directory) else {
            if explicit { throw AppError("models directory \(directory) does not exist") }
            logger.warning(
                "no models directory; coaching insights answer insightUnavailable",
                [("modelsDir", .string(directory))])
            models.replace(nil)
            return
        }
        do {
            let registry = try ModelRegistry.load(directory: directory, current: current, shadow: shadow)
            models.replace(registry)
            logger.info(
                "models loaded",
                [
                    ("current", .string(registry.currentVersion)),
                    ("versions", .array(registry.versions.map { .string($0.version) })),
                    ("shadow", .array(registry.shadows.map { .string($0.version) }))
                ])
        } catch {
            throw AppError("cannot load models from \(directory): \(error)")
        }
    }
}
