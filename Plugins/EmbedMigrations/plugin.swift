import Foundation
import PackagePlugin

/// Builds the SQL files of `migrations/<engine>/` (one folder per database engine) into the
/// target as Swift string literals, so the binaries carry their schema and no resource bundle
/// has to be shipped beside them.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL.appendingPathComponent("migrations")
        var files: [URL] = []
        for engine in try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() {
            let directory = root.appendingPathComponent(engine)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory),
                isDirectory.boolValue
            else { continue }
            files += try FileManager.default.contentsOfDirectory(atPath: directory.path)
                .filter { $0.hasSuffix(".sql") }
                .sorted()
                .map { directory.appendingPathComponent($0) }
        }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations",
                executable: try context.tool(named: "MigrationEmbedder").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output])
        ]
    }
}
