import Foundation
@testable import InsightControl
import XCTest

/// Every `insightctl` command line in the shell blocks of README.md and docs/ is one the parser
/// accepts: renaming or dropping an option the documentation uses fails here, also for the
/// blocks `make test-docs` does not run.
final class DocumentedCommandLinesTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testEveryDocumentedCommandLineParses() throws {
        let docs = Self.repository.appendingPathComponent("docs")
        let pages =
            try [Self.repository.appendingPathComponent("README.md")]
            + FileManager.default.contentsOfDirectory(at: docs, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "md" }.sorted { $0.path < $1.path }
        let groups = Set(AdminCommand.commands.map { $0.words[0] })
        var checked = 0
        for page in pages {
            for (line, words) in Self.invocations(in: try String(contentsOf: page, encoding: .utf8)) {
                // `insightctl` as a word of prose in a block (a file list, a diagram) is no invocation.
                guard let first = words.first, groups.contains(first) || first.hasPrefix("--") else { continue }
                checked += 1
                XCTAssertNoThrow(
                    try AdminCommand.parser.parse(words), "\(page.lastPathComponent):\(line): insightctl \(words.joined(separator: " "))")
            }
        }
        XCTAssertGreaterThan(checked, 40, "the command lines were not found")
    }

    /// The words after each `insightctl` in the fenced blocks of `markdown`, with the line
    /// they start on: lines continued with `\` joined, comments left out, quotes removed, up to
    /// the end of the command (a pipe, `;`, `)`, a redirection or `&&`).
    static func invocations(in markdown: String) -> [(line: Int, words: [String])] {
        var found: [(Int, [String])] = [], inBlock = false, pending = "", start = 0
        for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") { inBlock.toggle(); pending = ""; continue }
            guard inBlock else { continue }
            if pending.isEmpty { start = index + 1 }
            if line.hasSuffix("\\") { pending += line.dropLast() + " "; continue }
            let whole = uncommented(pending + line)
            pending = ""
            var rest = Substring(whole)
            while let range = rest.range(of: "insightctl ") {
                let before = rest[..<range.lowerBound].last
                rest = rest[range.upperBound...]
                if let before, !" \t;|&($/\"".contains(before) { continue }
                found.append((start, words(of: rest)))
            }
        }
        return found
    }

    /// `line` without its comment: from a `#` that begins a word outside quotes.
    static func uncommented(_ line: String) -> String {
        var quote: Character?, previous: Character = " "
        for index in line.indices {
            let character = line[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "#" && (previous == " " || previous == "\t") {
                return String(line[..<index])
            }
            previous = character
        }
        return line
    }

    /// Shell words up to the end of the command, without their quotes.
    static func words(of text: Substring) -> [String] {
        var words: [String] = [], word = "", quote: Character?, inWord = false
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
                continue
            }
            if character == "'" || character == "\"" { quote = character; inWord = true; continue }
            if character == " " || character == "\t" {
                if inWord { words.append(word); word = ""; inWord = false }
                continue
            }
            if "|;)<>&".contains(character) || (character == "#" && !inWord) { break }
            word.append(character)
            inWord = true
        }
        if inWord { words.append(word) }
        return words
    }
}
