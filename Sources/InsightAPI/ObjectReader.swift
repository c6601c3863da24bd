import JSON

/// Reads one JSON object of a closed schema, naming each offending field by its path
/// (`insights[1].schemaVersion`) so a caller can fix a request from the error alone.
/// Messages describe what was expected and never quote what was sent: a member the schema does
/// not know is named by its path when its name is plain (`Problem.unknownMember`), else by its
/// object and its position.
struct ObjectReader {
    let object: JSONObject
    let path: String

    /// Reads `value` at `path` as an object whose members are all among `allowed` (a handful of
    /// names: a scan costs less than hashing them into a set per object). `readElsewhere` are
    /// the positions in the document of members taken out of `value` by a `JSONInterception`,
    /// so that positions in errors count them.
    init(_ value: JSONValue, path: String, allowed: [String], readElsewhere: [Int] = []) throws(Problem) {
        guard case .object(let object) = value else {
            throw Problem.invalid(path.isEmpty ? "(body)" : path, "must be an object, not \(value.kindDescription)")
        }
        for (i, member) in object.members.enumerated() where !allowed.contains(member.key) {
            var position = i
            for removed in readElsewhere.sorted() where removed <= position { position += 1 }
            throw Problem.unknownMember(member.key, of: path, position: position, known: allowed)
        }
        self.object = object
        self.path = path
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func field(_ key: String) -> String { Self.join(path, key) }

    /// The member, if present. A JSON `null` means absent (what serializers such as Jackson's
    /// and Python's write for an unset optional member by default); a required member sent as
    /// `null` is missing.
    func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func require(_ key: String) throws(Problem) -> JSONValue {
        guard let value = value(key) else { throw Problem.invalid(field(key), "is required") }
        return value
    }

    func string(_ key: String, maxLength: Int, required: Bool = false) throws(Problem) -> String? {
        guard let value = required ? try require(key) : value(key) else { return nil }
        guard case .string(let text) = value else { throw Problem.invalid(field(key), "must be a string, not \(value.kindDescription)") }
        guard !text.isEmpty else { throw Problem.invalid(field(key), "must not be empty") }
        // Printable ASCII (ids, almost always) needs no Unicode look-ups: one byte per
        // character and no control character (U+0000–U+001F and U+007F are below or at 0x7F).
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            guard text.utf8.count <= maxLength else {
                throw Problem.invalid(field(key), "must be at most \(maxLength) characters")
            }
            return text
        }
        guard text.unicodeScalars.count <= maxLength else {
            throw Problem.invalid(field(key), "must be at most \(maxLength) characters")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw Problem.invalid(field(key), "must not contain control characters")
        }
        return text
    }

    func integer(_ key: String, in range: ClosedRange<Int64>, required: Bool = false) throws(Problem) -> Int64? {
        guard let value = required ? try require(key) : value(key) else { return nil }
        guard case .number(let number) = value else {
            throw Problem.invalid(field(key), "must be an integer, not \(value.kindDescription)")
        }
        guard number == number.rounded(), number >= Double(range.lowerBound), number <= Double(range.upperBound) else {
            throw Problem.invalid(field(key), "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int64(number)
    }

    func bool(_ key: String) throws(Problem) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw Problem.invalid(field(key), "must be a boolean, not \(value.kindDescription)") }
        return flag
    }

    func enumeration<E: RawRepresentable & CaseIterable>(_ key: String, _: E.Type, required: Bool = false) throws(Problem) -> E?
    where E.RawValue == String {
        guard let value = required ? try require(key) : value(key) else { return nil }
        guard case .string(let text) = value, let result = E(rawValue: text) else {
            throw Problem.invalid(field(key), "must be one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return result
    }

    func array(_ key: String, count: ClosedRange<Int>, required: Bool = false) throws(Problem) -> [JSONValue]? {
        guard let value = required ? try require(key) : value(key) else { return nil }
        guard case .array(let elements) = value else { throw Problem.invalid(field(key), "must be an array, not \(value.kindDescription)") }
        guard count.contains(elements.count) else {
            throw Problem.invalid(field(key), "must have \(count.lowerBound) to \(count.upperBound) elements")
        }
        return elements
    }

    func object(_ key: String, allowed: [String], readElsewhere: [Int] = []) throws(Problem) -> ObjectReader? {
        guard let value = value(key) else { return nil }
        return try ObjectReader(value, path: field(key), allowed: allowed, readElsewhere: readElsewhere)
    }
}

extension Problem {
    /// Parses a request body that must be one JSON object (400 otherwise), within the parser's
    /// default `JSONParser.Limits`: its time is linear in the body's length whatever its shape.
    static func parseBody(_ body: [UInt8], intercepting interception: JSONInterception? = nil) throws(Problem) -> JSONValue {
        guard !body.isEmpty else {
            throw Problem(400, .contextInvalid, "The request body is empty; a JSON object is required.", field: "(body)")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(body, intercepting: interception)
        } catch  where error.exceedsLimit {
            throw Problem(
                400, .contextInvalid,
                "The request body is beyond what any request of this API needs: \(error.reason) at byte \(error.offset).",
                field: "(body)")
        } catch {
            throw Problem(
                400, .contextInvalid, "The request body is not valid JSON: \(error.reason) at byte \(error.offset).", field: "(body)")
        }
        guard case .object = value else {
            throw Problem(400, .contextInvalid, "The request body must be a JSON object, not \(value.kindDescription).", field: "(body)")
        }
        return value
    }
}
