/// Wire names to values by the names' UTF-8 bytes, without making `String`s. For the closed
/// vocabularies a request names many times (28 summary features, event types and fields for each
/// of up to 5,000 events), where hashing a `String` or comparing against each name in turn cost
/// more than the rest of reading them.
///
/// A name of up to 32 bytes is read as one key: four 8-byte words (zero beyond its end) and its
/// length. Mixing the words picks a slot of an open-addressed table at least four times as large
/// as the names, and comparing five integers confirms it: no loop over the bytes, which hashing
/// and then comparing them one by one (FNV-1a) would walk twice.
struct NameTable<Value: Sendable>: Sendable {
    /// The longest name a table holds; longer bytes name nothing.
    static var maxLength: Int { 32 }

    private struct Key: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64)
        var count: Int

        /// The key of `name`, or nil when it is longer than any name can be.
        @inline(__always)
        init?(_ name: UnsafeRawBufferPointer) {
            guard name.count <= NameTable.maxLength else { return nil }
            words = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: name) }
            count = name.count
        }

        static func == (a: Key, b: Key) -> Bool {
            a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2
                && a.words.3 == b.words.3 && a.count == b.count
        }

        /// Each word multiplied by its own odd constant, so bytes at different places move
        /// different bits; the high bits, the best mixed, pick the slot.
        @inline(__always)
        func slot(shift: UInt64) -> Int {
            let mixed =
                (words.0 &* 0x9E37_79B9_7F4A_7C15) ^ (words.1 &* 0xC2B2_AE3D_27D4_EB4F)
                ^ (words.2 &* 0x1656_67B1_9E37_79F9) ^ (words.3 &* 0x27D4_EB2F_1656_67C5)
                ^ (UInt64(count) &* 0xFF51_AFD7_ED55_8CCD)
            return Int(truncatingIfNeeded: mixed >> shift)
        }
    }

    /// One slot of the table: a name's key and its value's index, or an index of -1 when empty.
    private struct Slot {
        var key: Key
        var index: Int32
    }

    private let slots: [Slot]
    private let values: [Value]
    /// 64 minus the table's size in bits: shifting a mixed key by it leaves a slot number.
    private let shift: UInt64

    init(_ entries: [(name: String, value: Value)]) {
        var bits = 3
        while 1 << bits < entries.count * 4 { bits += 1 }
        let size = 1 << bits
        let empty = Slot(key: Key(UnsafeRawBufferPointer(start: nil, count: 0))!, index: -1)
        var slots = [Slot](repeating: empty, count: size)
        for (index, entry) in entries.enumerated() {
            precondition(!entries[..<index].contains { $0.name == entry.name }, "a name twice in a NameTable")
            let name = Array(entry.name.utf8)
            guard let key = name.withUnsafeBytes({ Key($0) }) else {
                preconditionFailure("a name longer than \(Self.maxLength) bytes in a NameTable")
            }
            var slot = key.slot(shift: UInt64(64 - bits))
            while slots[slot].index >= 0 { slot = (slot + 1) & (size - 1) }
            slots[slot] = Slot(key: key, index: Int32(index))
        }
        self.slots = slots
        self.values = entries.map(\.value)
        self.shift = UInt64(64 - bits)
    }

    /// The value named by `name`'s bytes, if any.
    func value(_ name: UnsafeBufferPointer<UInt8>) -> Value? {
        guard let key = Key(UnsafeRawBufferPointer(name)) else { return nil }
        return slots.withUnsafeBufferPointer { slots in
            var slot = key.slot(shift: shift)
            while true {
                let index = Int(slots[slot].index)
                if index < 0 { return nil }
                if slots[slot].key == key { return values[index] }
                slot = (slot + 1) & (slots.count - 1)
            }
        }
    }

    /// The value named by `name`, if any.
    func value(_ name: String) -> Value? {
        var name = name
        return name.withUTF8 { value($0) }
    }
}
