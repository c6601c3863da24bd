import Foundation

// Usage: MigrationEmbedder OUTPUT.swift ENGINE/FILE.sql…
// Writes `embeddedMigrations`: for each engine (the name of the folder a file is in, e.g.
// "sqlite" or "postgresql"), its migrations in file-name order, as raw string literals.
let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: MigrationEmbedder OUTPUT ENGINE/FILE…\n".utf8))
    exit(2)
}
var byEngine: [String: [String]] = [:]
for path in arguments.dropFirst() {
    let engine = URL(fileURLWithPath: path).deletingLastPathComponent().lastPathComponent
    byEngine[engine, default: []].append(path)
}
var source = "// Generated from migrations/ by MigrationEmbedder. Do not edit.\n"
source += "let embeddedMigrations: [String: [(name: String, sql: String)]] = [\n"
for engine in byEngine.keys.sorted() {
    source += "    \"\(engine)\": [\n"
    for path in byEngine[engine]!.sorted(by: {
        URL(fileURLWithPath: $0).lastPathComponent < URL(fileURLWithPath: $1).lastPathComponent
    }) {
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let sql = try String(contentsOfFile: path, encoding: .utf8)
        // Enough '#' that no sequence in the SQL can close the raw literal early.
        var hashes = "#"
        while sql.contains("\"" + hashes) { hashes += "#" }
        source += "        (name: \(hashes)\"\(name)\"\(hashes), sql: \(hashes)\"\"\"\n\(sql)\n\"\"\"\(hashes)),\n"
    }
    source += "    ],\n"
}
source += "]\n"
let existing = try? String(contentsOfFile: output, encoding: .utf8)
if existing != source {
    // Not `atomically: false`: Foundation on Linux leaves an empty /tmp/TemporaryDirectory.* behind
    // for every atomic write, and the build reads the output only after this tool has exited.
    try source.write(toFile: output, atomically: false, encoding: .utf8)
}
