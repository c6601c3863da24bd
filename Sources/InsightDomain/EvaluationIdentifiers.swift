import Crypto
#if canImport(Glibc)
    import Glibc
#endif

/// An evaluation's id, and its insights' ids made from it.
///
/// The evaluation's id is a version-7 UUID whose last hex digit is `0`; the insight at position
/// `p` has the same id with that digit set to `p + 1`. An insight id thus names its evaluation
/// and its position, so the store finds an insight from its id through the evaluation's key,
/// with no index on insight ids to write on every commit (migration 0008). The caller holds both
/// ids anyway, so relating them discloses nothing; the other 70 random bits keep ids
/// unguessable.
///
/// Ids that do not have this shape (insights made before 0008, records written by tests) are
/// still accepted by the store, which keeps and indexes those explicitly.
public enum EvaluationIdentifiers {
    /// The most insights one evaluation id can name (last hex digits 1 through 8).
    public static let maxInsights = 8
    /// The longest evaluation or insight id the contract accepts (the ids made here are shorter):
    /// a longer one cannot name anything this server stored.
    public static let maxLength = 64

    /// A new evaluation id for `milliseconds` since the epoch (a version-7 UUID ending in `0`), and
    /// the ids of its `insights` insights (at most `maxInsights`).
    public static func make(insights: Int, milliseconds: Int64) -> (eventId: String, insightIds: [String]) {
        precondition((0...maxInsights).contains(insights), "an evaluation names at most \(maxInsights) insights")
        let id = SecureRandom.uuidV7(milliseconds: milliseconds)
        return (replacingLast(of: id, with: 0), (0..<insights).map { replacingLast(of: id, with: $0 + 1) })
    }

    /// The id of the insight at `position` of evaluation `eventId`, or nil when `eventId` does not
    /// name its insights (it is not 36 characters ending in `0`, or `position` is out of range).
    public static func insightId(eventId: String, position: Int) -> String? {
        guard (0..<maxInsights).contains(position), lastDigit(of: eventId) == 0 else { return nil }
        return replacingLast(of: eventId, with: position + 1)
    }

    /// The evaluation id and position that `insightId` was made from, if it has that shape.
    public static func origin(ofInsightId insightId: String) -> (eventId: String, position: Int)? {
        guard let last = lastDigit(of: insightId), (1...maxInsights).contains(last) else { return nil }
        return (replacingLast(of: insightId, with: 0), last - 1)
    }

    /// Whether `insightId` is the id made for `position` of evaluation `eventId`: what
    /// `insightId(eventId:position:) == insightId` says, without making that id (the store asks
    /// for every insight it writes, on the writer thread every evaluation waits for).
    public static func isMade(_ insightId: String, eventId: String, position: Int) -> Bool {
        guard (0..<maxInsights).contains(position), lastDigit(of: eventId) == 0,
            lastDigit(of: insightId) == position + 1
        else { return false }
        // Both 36 bytes (checked above): the first 35 compared in place, with `memcmp`; the
        // generic `elementsEqual` over the two UTF-8 views walks them an index at a time.
        let same = insightId.utf8.withContiguousStorageIfAvailable { made in
            eventId.utf8.withContiguousStorageIfAvailable { event in
                memcmp(made.baseAddress!, event.baseAddress!, 35) == 0
            }
        }
        if let same, let same { return same }
        return insightId.utf8.dropLast().elementsEqual(eventId.utf8.dropLast())
    }

    private static let digitZero = UInt8(ascii: "0")

    /// The decimal digit that ends `id`, when `id` has an evaluation id's length (36 bytes).
    private static func lastDigit(of id: String) -> Int? {
        guard id.utf8.count == 36, let last = id.utf8.last, (digitZero...digitZero + 9).contains(last) else { return nil }
        return Int(last - digitZero)
    }

    /// `id` with its last byte set to the decimal digit `digit`, by bytes: String's own
    /// `dropLast` walks grapheme clusters, which this hot path cannot afford.
    private static func replacingLast(of id: String, with digit: Int) -> String {
        var id = id
        return id.withUTF8 { bytes in
            String(unsafeUninitializedCapacity: bytes.count) { out in
                UnsafeMutableRawBufferPointer(out).copyMemory(from: UnsafeRawBufferPointer(bytes))
                out[bytes.count - 1] = digitZero + UInt8(digit)
                return bytes.count
            }
        }
    }
}
