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

/// What `body` prints on standard output, with its result.
func captureStandardOutput(_ body: () -> Int32) -> (status: Int32, output: String) {
    capture(STDOUT_FILENO, body)
}

/// What `body` prints on standard error, with its result.
func captureStandardError(_ body: () -> Int32) -> (status: Int32, output: String) {
    capture(STDERR_FILENO, body)
}

/// What `body` writes to `descriptor` (a file in its place meanwhile), with its result.
private func capture(_ descriptor: Int32, _ body: () -> Int32) -> (status: Int32, output: String) {
    fflush(nil)
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("output-\(UUID().uuidString)").path
    let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let saved = dup(descriptor)
    dup2(file, descriptor)
    let status = body()
    fflush(nil)
    dup2(saved, descriptor)
    close(saved)
    close(file)
    let output = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    unlink(path)
    return (status, output)
}
