/// One file of the admin console, compiled into the binary by the `EmbedConsole` plugin.
struct EmbeddedFile: Sendable {
    let path: String
    let contentType: String
    let etag: String
    let bytes: [UInt8]

    init(path: String, contentType: String, etag: String, text: String) {
        self.init(path: path, contentType: contentType, etag: etag, bytes: Array(text.utf8))
    }

    init(path: String, contentType: String, etag: String, bytes: [UInt8]) {
        self.path = path
        self.contentType = contentType
        self.etag = etag
        self.bytes = bytes
    }
}

/// The admin console's static files (`console/` in the repository), served at `/console/`.
public enum ConsoleFiles {
    /// A file as the daemon serves it.
    public struct File: Sendable {
        public let contentType: String
        /// A strong entity tag of the bytes (quoted).
        public let etag: String
        public let bytes: [UInt8]
    }

    /// The file at `path` relative to `/console/` (`""` is `index.html`), or nil.
    public static func file(_ path: String) -> File? { files[path.isEmpty ? "index.html" : path] }

    /// Every path served, for tests.
    public static var paths: [String] { files.keys.sorted() }

    private static let files: [String: File] = Dictionary(
        uniqueKeysWithValues: embeddedConsoleFiles.map {
            ($0.path, File(contentType: $0.contentType, etag: $0.etag, bytes: $0.bytes))
        })
}
