import Foundation
import JSON
import XCTest

/// The README's API table names every endpoint of the OpenAPI document (issue 40): a path in
/// full, or, in the row of the path it extends, as `…/` and what follows its first id.
final class ReadmeAPITableTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testEveryEndpointIsInTheAPITable() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try XCTUnwrap(readme.range(of: "\n## API\n"))
        let end = try XCTUnwrap(readme.range(of: "\n## ", range: start.upperBound..<readme.endIndex))
        let table = readme[start.upperBound..<end.lowerBound]
        let spec = try JSONParser.parse(try Array(Data(contentsOf: Self.root.appendingPathComponent("openapi/openapi.json"))))
        guard case .object(let paths)? = spec["paths"] else { return XCTFail("no paths") }
        XCTAssertGreaterThan(paths.members.count, 20)
        for (path, _) in paths.members {
            let tail = path.range(of: "}/").map { "…/" + path[$0.upperBound...] }
            XCTAssertTrue(table.contains(path) || tail.map { table.contains($0) } == true, "README's API table lacks \(path)")
        }
    }
}
