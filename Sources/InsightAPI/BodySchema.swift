import InsightDomain
import JSON

/// What a member of a request body may hold, with its limits: the declarative side of a
/// `BodyObject`, which tests and documentation walk.
indirect enum BodyKind: Sendable {
    /// A non-empty string of at most this many characters, without control characters.
    case string(maxLength: Int)
    /// A non-empty token of at most this many characters: letters, digits and `.`, `_`, `+`, `-`
    /// (a name or a version number, never text).
    case token(maxLength: Int)
    /// An integer in the range.
    case integer(ClosedRange<Int64>)
    case boolean
    /// One of these names.
    case oneOf([String])
    /// One of these names, or another token of at most `maxLength` characters (letters, digits,
    /// `.`, `_`, `+`, `-`), with which its object is skipped: what a newer client may send.
    case oneOfOrSkipped([String], maxLength: Int)
    /// An array of these names, with this many elements.
    case namesOf([String], count: ClosedRange<Int>)
    case object([BodyField])
    /// An array of objects, with this many elements.
    case array(of: [BodyField], count: ClosedRange<Int>)
    /// An object of feature names and numbers, with at most this many members.
    case features(max: Int)
}

/// One member of a body object as the contract states it: its name, what it holds, whether it
/// must be present.
struct BodyField: Sendable {
    let name: String
    let kind: BodyKind
    let required: Bool
}

/// One member of a body object, declared once with its name, kind, limits and where its value
/// goes, from which both decoders read it: `read` from the bytes (false to decline), `decode`
/// from the parsed tree (throwing the problem that names it). A member whose `decode` is nil
/// has rules of its own (`interaction`), and its object's owner decodes it after the others.
struct BodyMember<Value>: Sendable {
    let name: StaticString
    let key: String
    let kind: BodyKind
    let required: Bool
    let read: @Sendable (inout ByteCursor, inout Value) -> Bool
    let decode: (@Sendable (ObjectReader, inout Value) throws(Problem) -> Void)?

    init(
        _ name: StaticString, kind: BodyKind, required: Bool,
        read: @escaping @Sendable (inout ByteCursor, inout Value) -> Bool,
        decode: (@Sendable (ObjectReader, inout Value) throws(Problem) -> Void)?
    ) {
        self.name = name
        self.key = name.description
        self.kind = kind
        self.required = required
        self.read = read
        self.decode = decode
    }

    var field: BodyField { BodyField(name: key, kind: kind, required: required) }

    /// A string member; `refuse` answers why a string within the limits is still refused (or
    /// nil), given the value read so far.
    static func string(
        _ name: StaticString, maxLength: Int, required: Bool = false,
        refuse: (@Sendable (Value, String) -> String?)? = nil,
        _ set: @escaping @Sendable (inout Value, String) -> Void
    ) -> BodyMember {
        let key = name.description
        return BodyMember(
            name, kind: .string(maxLength: maxLength), required: required,
            read: { cursor, value in
                guard let text = cursor.printableString(maxLength: maxLength), refuse?(value, text) == nil else { return false }
                set(&value, text)
                return true
            },
            decode: { reader, value throws(Problem) in
                guard let text = try reader.string(key, maxLength: maxLength, required: required) else { return }
                if let detail = refuse?(value, text) { throw Problem.invalid(reader.field(key), detail) }
                set(&value, text)
            })
    }

    /// A token member (`BodyKind.token`): a string of at most `maxLength` token characters that
    /// does not look like personal data.
    static func token(
        _ name: StaticString, maxLength: Int, required: Bool = false,
        _ set: @escaping @Sendable (inout Value, String) -> Void
    ) -> BodyMember {
        let key = name.description
        return BodyMember(
            name, kind: .token(maxLength: maxLength), required: required,
            read: { cursor, value in
                guard let text = cursor.printableString(maxLength: maxLength), InteractionSource.isToken(text.utf8),
                    PIIGuard.detect(text) == nil
                else { return false }
                set(&value, text)
                return true
            },
            decode: { reader, value throws(Problem) in
                guard let text = try reader.string(key, maxLength: maxLength, required: required) else { return }
                guard InteractionSource.isToken(text.utf8) else { throw Problem.invalid(reader.field(key), tokenRule) }
                // A token is stored: a card or phone number written as one is refused like a request id.
                if let kind = PIIGuard.detect(text) {
                    throw Problem.invalid(
                        reader.field(key), "looks like personal data (\(kind.description)); send a name or a version number")
                }
                set(&value, text)
            })
    }

    /// What a token member refuses, in its problem's detail.
    static var tokenRule: String { "must hold only letters, digits and . _ + - (a name or a version number)" }

    /// An integer member; `refuse` as for strings.
    static func integer(
        _ name: StaticString, in range: ClosedRange<Int64>, required: Bool = false,
        refuse: (@Sendable (Value, Int64) -> String?)? = nil,
        _ set: @escaping @Sendable (inout Value, Int64) -> Void
    ) -> BodyMember {
        let key = name.description
        return BodyMember(
            name, kind: .integer(range), required: required,
            read: { cursor, value in
                guard let number = cursor.plainInteger(), range.contains(number), refuse?(value, number) == nil else { return false }
                set(&value, number)
                return true
            },
            decode: { reader, value throws(Problem) in
                guard let number = try reader.integer(key, in: range, required: required) else { return }
                if let detail = refuse?(value, number) { throw Problem.invalid(reader.field(key), detail) }
                set(&value, number)
            })
    }

    static func boolean(_ name: StaticString, _ set: @escaping @Sendable (inout Value, Bool) -> Void) -> BodyMember {
        let key = name.description
        return BodyMember(
            name, kind: .boolean, required: false,
            read: { cursor, value in
                guard let flag = cursor.literalBool() else { return false }
                set(&value, flag)
                return true
            },
            decode: { reader, value throws(Problem) in
                if let flag = try reader.bool(key) { set(&value, flag) }
            })
    }

    static func enumeration<E: BodyEnumeration>(
        _ name: StaticString, _: E.Type, required: Bool = false,
        _ set: @escaping @Sendable (inout Value, E) -> Void
    ) -> BodyMember {
        let key = name.description
        return BodyMember(
            name, kind: .oneOf(E.allCases.map(\.rawValue)), required: required,
            read: { cursor, value in
                guard let text = cursor.plainString(), let item = E(utf8: text) else { return false }
                set(&value, item)
                return true
            },
            decode: { reader, value throws(Problem) in
                if let item = try reader.enumeration(key, E.self, required: required) { set(&value, item) }
            })
    }

    /// An enumeration a newer client may extend: a name of `E` is `set`; another token of at
    /// most `maxLength` characters calls `skip` (its object is then left out, never stored or
    /// echoed: no text enters); anything else is refused.
    static func enumerationOrSkipped<E: BodyEnumeration>(
        _ name: StaticString, _: E.Type, maxLength: Int, required: Bool = false,
        skip: @escaping @Sendable (inout Value) -> Void,
        _ set: @escaping @Sendable (inout Value, E) -> Void
    ) -> BodyMember {
        let key = name.description
        let names = E.allCases.map(\.rawValue)
        return BodyMember(
            name, kind: .oneOfOrSkipped(names, maxLength: maxLength), required: required,
            read: { cursor, value in
                guard let text = cursor.plainString() else { return false }
                if let item = E(utf8: text) {
                    set(&value, item)
                } else {
                    guard (1...maxLength).contains(text.count), InteractionSource.isToken(text) else { return false }
                    skip(&value)
                }
                return true
            },
            decode: { reader, value throws(Problem) in
                guard let text = try reader.string(key, maxLength: maxLength, required: required) else { return }
                if let item = E(rawValue: text) {
                    set(&value, item)
                } else {
                    guard InteractionSource.isToken(text.utf8) else {
                        throw Problem.invalid(
                            reader.field(key),
                            "must be one of \(names.joined(separator: ", ")), or another name "
                                + "(letters, digits and . _ + -), which is skipped")
                    }
                    skip(&value)
                }
            })
    }

    /// An array of names of `E` (in any order; a name may repeat), with at most one element
    /// per name: a set of closed values.
    static func enumerations<E: BodyEnumeration>(
        _ name: StaticString, _: E.Type,
        _ set: @escaping @Sendable (inout Value, [E]) -> Void
    ) -> BodyMember {
        let key = name.description
        let count = 0...E.allCases.count
        let names = E.allCases.map(\.rawValue)
        return BodyMember(
            name, kind: .namesOf(names, count: count), required: false,
            read: { cursor, value in
                guard cursor.take(UInt8(ascii: "[")) else { return false }
                var items: [E] = []
                cursor.skipWhitespace()
                if !cursor.take(UInt8(ascii: "]")) {
                    repeat {
                        cursor.skipWhitespace()
                        guard items.count < count.upperBound, let text = cursor.plainString(), let item = E(utf8: text) else {
                            return false
                        }
                        items.append(item)
                        cursor.skipWhitespace()
                    } while cursor.take(UInt8(ascii: ","))
                    guard cursor.take(UInt8(ascii: "]")) else { return false }
                }
                set(&value, items)
                return true
            },
            decode: { reader, value throws(Problem) in
                guard let values = try reader.array(key, count: count) else { return }
                let path = reader.field(key)
                var items: [E] = []
                for (i, element) in values.enumerated() {
                    guard case .string(let text) = element, let item = E(rawValue: text) else {
                        throw Problem.invalid("\(path)[\(i)]", "must be one of \(names.joined(separator: ", "))")
                    }
                    items.append(item)
                }
                set(&value, items)
            })
    }

    static func object<Member>(
        _ name: StaticString, _ object: BodyObject<Member>,
        _ set: @escaping @Sendable (inout Value, Member) -> Void
    ) -> BodyMember {
        let key = name.description
        return BodyMember(
            name, kind: .object(object.fields), required: false,
            read: { cursor, value in
                guard let member = object.read(&cursor) else { return false }
                set(&value, member)
                return true
            },
            decode: { reader, value throws(Problem) in
                guard let member = reader.value(key) else { return }
                set(&value, try object.decode(member, path: reader.field(key)))
            })
    }

    static func array<Element>(
        _ name: StaticString, of object: BodyObject<Element>, count: ClosedRange<Int>,
        required: Bool = false,
        _ set: @escaping @Sendable (inout Value, [Element]) -> Void
    ) -> BodyMember {
        let key = name.description
        return BodyMember(
            name, kind: .array(of: object.fields, count: count), required: required,
            read: { cursor, value in
                guard let elements = object.readArray(&cursor, count: count) else { return false }
                set(&value, elements)
                return true
            },
            decode: { reader, value throws(Problem) in
                guard let values = try reader.array(key, count: count, required: required) else { return }
                let path = reader.field(key)
                var elements: [Element] = []
                elements.reserveCapacity(values.count)
                for (i, element) in values.enumerated() {
                    elements.append(try object.decode(element, path: "\(path)[\(i)]"))
                }
                set(&value, elements)
            })
    }

    /// A member with rules of its own: read from the bytes by `read`, decoded from the tree by
    /// its object's owner.
    static func custom(
        _ name: StaticString, kind: BodyKind,
        read: @escaping @Sendable (inout ByteCursor, inout Value) -> Bool
    ) -> BodyMember {
        BodyMember(name, kind: kind, required: false, read: read, decode: nil)
    }
}

/// An enumeration a body member holds, readable from its wire name's bytes.
protocol BodyEnumeration: RawRepresentable, CaseIterable, Sendable where RawValue == String {
    init?(utf8 name: UnsafeBufferPointer<UInt8>)
}

extension BodyEnumeration {
    init?(utf8 name: UnsafeBufferPointer<UInt8>) { self.init(rawValue: String(decoding: name, as: UTF8.self)) }
}

/// A closed JSON object of a request body: its members in the contract's order (the order the
/// known fields are listed in errors, and the order the tree path checks them in), and the value
/// they are read into, starting from `start`. A class, so that the members reading nested
/// objects hold it by reference.
final class BodyObject<Value: Sendable>: Sendable {
    let start: Value
    let members: [BodyMember<Value>]
    /// The member names, for `ObjectReader`.
    let names: [String]
    /// The member names, for matching them in the bytes.
    private let quotedNames: [MemberName]
    private let requiredMask: UInt64

    init(start: Value, _ members: [BodyMember<Value>]) {
        precondition(members.count <= 64, "a body object's members are tracked in 64 bits")
        self.start = start
        self.members = members
        self.names = members.map(\.key)
        self.quotedNames = members.map { MemberName($0.name) }
        self.requiredMask = members.indices.reduce(0) { mask, i in members[i].required ? mask | 1 << i : mask }
    }

    var fields: [BodyField] { members.map(\.field) }

    /// Reads the object from the bytes, starting from `start` (the object's own start value by
    /// default): every member known and at most once, the required ones present; nil to decline.
    func read(_ cursor: inout ByteCursor) -> Value? { read(&cursor, from: start) }

    func read(_ cursor: inout ByteCursor, from start: Value) -> Value? {
        guard cursor.take(UInt8(ascii: "{")) else { return nil }
        let members = self.members, quotedNames = self.quotedNames
        var value = start
        var seen: UInt64 = 0
        cursor.skipWhitespace()
        if !cursor.take(UInt8(ascii: "}")) {
            repeat {
                cursor.skipWhitespace()
                // The member whose name is next, among those not yet seen: an unknown or repeated
                // member declines.
                var found: Int?
                for i in quotedNames.indices where seen & (1 << i) == 0 && cursor.take(quotedNames[i]) {
                    found = i
                    break
                }
                guard let i = found, cursor.takeColon() else { return nil }
                // `null` means absent: an optional member is left as it is; a required one is
                // missing, which the tree path names.
                cursor.skipWhitespace()
                if cursor.takeNull() {
                    guard !members[i].required else { return nil }
                } else {
                    guard members[i].read(&cursor, &value) else { return nil }
                }
                seen |= 1 << i
                cursor.skipWhitespace()
            } while cursor.take(UInt8(ascii: ","))
            guard cursor.take(UInt8(ascii: "}")) else { return nil }
        }
        return seen & requiredMask == requiredMask ? value : nil
    }

    /// Reads `[object, …]` with `count` elements from the bytes; nil to decline.
    func readArray(_ cursor: inout ByteCursor, count: ClosedRange<Int>) -> [Value]? {
        guard cursor.take(UInt8(ascii: "[")) else { return nil }
        var elements: [Value] = []
        cursor.skipWhitespace()
        if cursor.take(UInt8(ascii: "]")) { return count.contains(0) ? elements : nil }
        repeat {
            cursor.skipWhitespace()
            guard elements.count < count.upperBound, let element = read(&cursor) else { return nil }
            elements.append(element)
            cursor.skipWhitespace()
        } while cursor.take(UInt8(ascii: ","))
        return cursor.take(UInt8(ascii: "]")) && elements.count >= count.lowerBound ? elements : nil
    }

    /// Decodes `value` at `path` from the parsed tree, naming the first offending field.
    func decode(_ value: JSONValue, path: String, from start: Value? = nil) throws(Problem) -> Value {
        try decodeMembers(try ObjectReader(value, path: path, allowed: names), from: start)
    }

    /// Decodes the members of an object already checked against `names`, in order; members with
    /// rules of their own are left to the caller.
    func decodeMembers(_ reader: ObjectReader, from start: Value? = nil) throws(Problem) -> Value {
        var value = start ?? self.start
        for member in members { try member.decode?(reader, &value) }
        return value
    }
}
