import Foundation

// Usage: ConsoleEmbedder OUTPUT.swift ROOT RELATIVE-PATH…
// Writes `embeddedConsoleFiles`: each file under ROOT by its path relative to it, with its
// content type and an entity tag (FNV-1a 64 of its bytes). Text files (HTML, CSS, JavaScript,
// SVG) become raw string literals, quick to compile; anything else a byte-array literal.
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: ConsoleEmbedder OUTPUT ROOT FILE…\n".utf8))
    exit(2)
}
let (output, root) = (arguments[0], arguments[1])
let textTypes = [
    "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
    "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml; charset=utf-8",
    "txt": "text/plain; charset=utf-8", "json": "application/json"
]
let binaryTypes = ["png": "image/png", "ico": "image/x-icon", "woff2": "font/woff2"]

func fnv1a(_ bytes: Data) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return String(hash, radix: 16)
}

var source = "// Generated from console/ by ConsoleEmbedder. Do not edit.\n"
source += "let embeddedConsoleFiles: [EmbeddedFile] = [\n"
for relative in arguments.dropFirst(2).sorted() {
    let data = try Data(contentsOf: URL(fileURLWithPath: root).appendingPathComponent(relative))
    let ext = URL(fileURLWithPath: relative).pathExtension.lowercased()
    let tag = "\"" + fnv1a(data) + "\""
    if let type = textTypes[ext], let text = String(data: data, encoding: .utf8) {
        // Enough '#' that nothing in the file can close the raw literal early or read as an escape.
        var hashes = "#"
        while text.contains("\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
        source += "    EmbeddedFile(path: \"\(relative)\", contentType: \"\(type)\", etag: #\"\(tag)\"#,\n"
        source += "                 text: \(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)),\n"
    } else if let type = binaryTypes[ext] {
        let bytes = data.map { String($0) }.joined(separator: ",")
        source += "    EmbeddedFile(path: \"\(relative)\", contentType: \"\(type)\", etag: #\"\(tag)\"#,\n"
        source += "                 bytes: [\(bytes)] as [UInt8]),\n"
    } else {
        FileHandle.standardError.write(Data("ConsoleEmbedder: \(relative): unknown type (or not UTF-8 text)\n".utf8))
        exit(1)
    }
}
source += "]\n"
let existing = try? String(contentsOfFile: output, encoding: .utf8)
if existing != source {
    // Not `atomically: false`: Foundation on Linux leaves an empty /tmp/TemporaryDirectory.* behind
    // for every atomic write, and the build reads the output only after this tool has exited.
    try source.write(toFile: output, atomically: false, encoding: .utf8)
}
