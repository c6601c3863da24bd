/// Wire names to values by the names' UTF-8 bytes, without making `String`s: FNV-1a of the
/// bytes picks a slot of an open-addressed table at least four times as large as the names, and
/// one comparison of bytes confirms it. For the closed vocabularies a request names many times
/// (28 summary features, event types and fields for each of up to 5,000 events), where hashing
/// a `String` or comparing against each name in turn cost more than the rest of reading them.
struct NameTable<Value: Sendable>: Sendable {
    /// Every name's bytes, one after another (one buffer: no array per name to reach through).
    private let bytes: [UInt8]
    /// Per name: where its bytes start in `bytes`, and how many.
    private let spans: [(start: Int32, count: Int32)]
    private let values: [Value]
    /// Index into `values`, or -1 for an empty slot.
    private let slots: [Int32]

    init(_ entries: [(name: String, value: Value)]) {
        var size = 8
        while size < entries.count * 4 { size *= 2 }
        var slots = [Int32](repeating: -1, count: size)
        var bytes: [UInt8] = [], spans: [(start: Int32, count: Int32)] = []
        for (index, entry) in entries.enumerated() {
            let name = Array(entry.name.utf8)
            precondition(!entries[..<index].contains { $0.name == entry.name }, "a name twice in a NameTable")
            spans.append((Int32(bytes.count), Int32(name.count)))
            bytes.append(contentsOf: name)
            var slot = Self.hash(name) & (size - 1)
            while slots[slot] >= 0 { slot = (slot + 1) & (size - 1) }
            slots[slot] = Int32(index)
        }
        self.bytes = bytes
        self.spans = spans
        self.values = entries.map(\.value)
        self.slots = slots
    }

    /// The value named by `name`'s bytes, if any.
    func value(_ name: UnsafeBufferPointer<UInt8>) -> Value? {
        bytes.withUnsafeBufferPointer { bytes in
            slots.withUnsafeBufferPointer { slots in
                var slot = Self.hash(name) & (slots.count - 1)
                while true {
                    let index = Int(slots[slot])
                    if index < 0 { return nil }
                    let span = spans[index]
                    if Int(span.count) == name.count && Self.equal(bytes.baseAddress! + Int(span.start), name) {
                        return values[index]
                    }
                    slot = (slot + 1) & (slots.count - 1)
                }
            }
        }
    }

    /// The value named by `name`, if any.
    func value(_ name: String) -> Value? {
        var name = name
        return name.withUTF8 { value($0) }
    }

    private static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in bytes { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash)
    }

    /// Byte by byte over pointers: `elementsEqual` across an array and a buffer is not
    /// specialised and cost ten times as much.
    private static func equal(_ stored: UnsafePointer<UInt8>, _ name: UnsafeBufferPointer<UInt8>) -> Bool {
        for i in 0..<name.count where stored[i] != name[i] { return false }
        return true
    }
}
