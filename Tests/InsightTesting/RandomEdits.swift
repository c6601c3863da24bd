/// Random edits of a document's bytes, for the differential tests of the readers that take part
/// of a request from its bytes: each edit replaces, deletes or inserts one byte (inserted and
/// replacing bytes come from `alphabet`, the characters that make JSON interesting).
public enum RandomEdits {
    /// `bytes` after 1–3 edits.
    public static func applied<G: RandomNumberGenerator>(to bytes: [UInt8], alphabet: [UInt8], using generator: inout G) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let i = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[i] = alphabet.randomElement(using: &generator)!
            case 1: bytes.remove(at: i)
            default: bytes.insert(alphabet.randomElement(using: &generator)!, at: i)
            }
        }
        return bytes
    }
}
