@testable import CoachingModel
import XCTest

/// `NameTable` answers exactly the names it holds, by their bytes: keys end at a name's length,
/// so prefixes, extensions, other cases and bytes past 32 name nothing.
final class NameTableTests: XCTestCase {
    static let names = [
        "t", "type", "keyDown", "payee", "submitHesitatio", "submitHesitation",
        "submitHesitationS", "callStartedBeforeSession", "abcdefghijklmnopqrstuvwxyzABCDEF"
    ]

    func value(_ table: NameTable<Int>, _ name: String) -> Int? {
        Array(name.utf8).withUnsafeBufferPointer { table.value($0) }
    }

    func testEveryNameIsFoundWithItsOwnValue() {
        let table = NameTable(Self.names.enumerated().map { (name: $0.element, value: $0.offset) })
        for (index, name) in Self.names.enumerated() {
            XCTAssertEqual(value(table, name), index, name)
            XCTAssertEqual(table.value(name), index, name)
        }
    }

    func testOtherBytesNameNothing() {
        let table = NameTable(Self.names.enumerated().map { (name: $0.element, value: $0.offset) })
        for other in [
            "", "ty", "typ", "types", "Type", "TYPE", "keydown", "keyDown\0", "t\0",
            "abcdefghijklmnopqrstuvwxyzABCDEFG", "abcdefghijklmnopqrstuvwxyzABCDE",
            "callStartedBeforeSessioN", String(repeating: "x", count: 200), "typé"
        ] {
            XCTAssertNil(value(table, other), other)
        }
    }

    func testManyNamesAreAllFoundPastSlotCollisions() {
        // 300 names in 2,048 slots: some share a first slot and are found by probing onward.
        let names = (0..<300).map { "name\($0)" }
        let table = NameTable(names.enumerated().map { (name: $0.element, value: $0.offset) })
        for (index, name) in names.enumerated() { XCTAssertEqual(value(table, name), index) }
        XCTAssertNil(value(table, "name300"))
    }
}
