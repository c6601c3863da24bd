import Foundation

/// Text tables and numbers as insightctl prints them.
enum Table {
    /// Columns padded to their widest cell, two spaces apart, without trailing blanks.
    static func render(_ header: [String], _ rows: [[String]]) -> String {
        let widths = header.indices.map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        return ([header] + rows).map { row in
            row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }

    static func print(_ header: [String], _ rows: [[String]]) { Swift.print(render(header, rows)) }

    /// A whole number without its `.0`.
    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
