import Foundation
import PackagePlugin

/// Builds the admin console's static files (`console/`: HTML, CSS, JavaScript modules) into the
/// target as Swift literals, as `EmbedMigrations` does with the SQL migrations: the daemon serves
/// `/console/` from its own binary and nothing is shipped or installed beside it.
@main
struct EmbedConsole: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL.appendingPathComponent("console")
        var files: [String] = []
        if let walker = FileManager.default.enumerator(atPath: root.path) {
            for case let relative as String in walker {
                var isDirectory: ObjCBool = false
                let full = root.appendingPathComponent(relative).path
                guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
                    !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") })
                else { continue }
                files.append(relative)
            }
        }
        files.sort()
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedConsole.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) console files",
                executable: try context.tool(named: "ConsoleEmbedder").url,
                arguments: [output.path, root.path] + files,
                inputFiles: files.map { root.appendingPathComponent($0) },
                outputFiles: [output])
        ]
    }
}
