import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` with `text` as its standard input (a file in place of descriptor 0).
func withStandardInput<T>(_ text: String, _ body: () throws -> T) rethrows -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("stdin-\(UUID().uuidString)").path
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    defer { unlink(path) }
    let file = open(path, O_RDONLY)
    let saved = dup(STDIN_FILENO)
    dup2(file, STDIN_FILENO)
    defer {
        dup2(saved, STDIN_FILENO)
        close(saved)
        close(file)
    }
    return try body()
}
