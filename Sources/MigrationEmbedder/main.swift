import Foundation

// Usage: MigrationEmbedder OUTPUT.swift FILE.sql…
// Writes `embeddedMigrations`, the migrations in file-name order, as raw string literals.
let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: MigrationEmbedder OUTPUT FILE…\n".utf8))
    exit(2)
}
var source = "// Generated from migrations/ by MigrationEmbedder. Do not edit.\n"
source += "let embeddedMigrations: [(name: String, sql: String)] = [\n"
for path in arguments.dropFirst().sorted() {
    let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
    let sql = try String(contentsOfFile: path, encoding: .utf8)
    // Enough '#' that no sequence in the SQL can close the raw literal early.
    var hashes = "#"
    while sql.contains("\"" + hashes) { hashes += "#" }
    source += "    (name: \(hashes)\"\(name)\"\(hashes), sql: \(hashes)\"\"\"\n\(sql)\n\"\"\"\(hashes)),\n"
}
source += "]\n"
let existing = try? String(contentsOfFile: output, encoding: .utf8)
if existing != source {
    try source.write(toFile: output, atomically: true, encoding: .utf8)
}
