/// What an error may repeat of a member name the caller made up. A schema's names are short
/// words; a name such as `interaction` or `newCounterParty` is most likely a mistake the caller
/// wants named, while a long or unusual one may be a value sent where a name belongs (an
/// account id, an email address, a whole object serialized into a key) and is never repeated.
public enum JSONMemberName {
    /// Whether `name` looks like a schema's member name, 1 to 64 ASCII letters, digits and `_`
    /// starting with a letter: only such a name is repeated in an answer (never in a log line).
    public static func isPlain(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 64, isLetter(first) else { return false }
        return bytes.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
}
