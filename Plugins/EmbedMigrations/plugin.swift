import Foundation
import PackagePlugin

/// Builds the SQL files of `migrations/` into the target as Swift string literals, so the
/// binaries carry their schema and no resource bundle has to be shipped beside them.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appendingPathComponent("migrations")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedMigrations.swift")
        return [.buildCommand(
            displayName: "Embedding \(files.count) migrations",
            executable: try context.tool(named: "MigrationEmbedder").url,
            arguments: [output.path] + files.map(\.path),
            inputFiles: files,
            outputFiles: [output])]
    }
}
