/// Typed views of a value, for readers that walk a document of known shape.
extension JSONValue {
    /// The object, if this is one.
    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    /// The text, if this is a string.
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The number, if this is one.
    public var numberValue: Double? { if case .number(let n) = self { return n } else { return nil } }
    /// The flag, if this is a boolean.
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The number, if it is whole and exactly representable as an Int.
    public var intValue: Int? {
        guard let n = numberValue, n == n.rounded(), abs(n) < 9.007_199_254_740_992e15 else { return nil }
        return Int(n)
    }
    /// The member `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }
    /// The element at `index`, if this is an array that long.
    public subscript(index: Int) -> JSONValue? {
        guard let a = arrayValue, a.indices.contains(index) else { return nil }
        return a[index]
    }
}
