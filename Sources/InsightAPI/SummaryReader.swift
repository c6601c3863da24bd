import CoachingModel

/// Reads `interaction.summary` straight from the request bytes in the common, well-formed case,
/// so that its 28 features do not become a `JSONValue` tree and 28 `String`s first.
///
/// It accepts only an object whose members are feature names (ASCII letters, no escapes), each
/// at most once, with numbers as values, and whitespace where JSON allows it. That is valid JSON,
/// and the tree path would read it the same way. Anything else — an unknown name, a repeated one,
/// escapes, other values, any error — makes it decline, and the parser and the tree path take
/// over and name the offending field.
enum SummaryReader {
    /// The summary and the offset just past the object, or nil to decline.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (summary: SummaryFeatures, end: Int)? {
        var cursor = ByteCursor(bytes: bytes, index: start)
        var summary = SummaryFeatures()
        summary.features.reserveCapacity(Feature.allCases.count)
        var seen: UInt64 = 0  // one bit per feature
        let complete = cursor.readObject { cursor in
            guard let name = cursor.plainString(),
                let feature = Feature(utf8: name),
                seen & (1 << feature.rawValue) == 0
            else { return false }
            seen |= 1 << feature.rawValue
            guard cursor.takeColon(), let value = cursor.number() else { return false }
            summary.features.append((feature, value))
            return true
        }
        return complete ? (summary, cursor.index) : nil
    }
}
