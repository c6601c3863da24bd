import Foundation
import InsightApp
import JSON

// openapi/openapi.json as the tests read it: the conformance suite (OpenAPIContractTests), and
// the tests of other targets that check a live answer against one of its schemas.

// MARK: - The document

/// openapi/openapi.json, parsed with the project's JSON module.
public struct OpenAPISpec {
    /// The package root: this file's real location (Tests/DaemonTesting may be a symlink) two levels up.
    public static let packageRoot = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public struct Operation {
        public let path: String
        public let method: String
        public let value: JSONValue
        public var id: String { "\(method) \(path)" }
        /// Security applies unless the operation clears it with `security: []`.
        public var isSecured: Bool { value["security"] != .array([]) }
    }

    public let root: JSONValue
    public let operations: [Operation]
    public let paths: [String]
    public let problemCodes: Set<String>

    public static func load() throws -> OpenAPISpec {
        let url = packageRoot.appendingPathComponent("openapi/openapi.json")
        let data = try Data(contentsOf: url)
        let root = try JSONParser.parse(Array(data), limits: JSONParser.Limits(maxDepth: 64, maxMembers: .max, maxValues: .max))
        guard root["openapi"]?.stringValue == "3.1.0" else { throw AppError("openapi.json is not OpenAPI 3.1.0") }
        return OpenAPISpec(root: root)
    }

    /// The document `root` (for checks run on a changed copy of it).
    public init(root: JSONValue) {
        let pathItems = root["paths"]?.oaMembers?.filter { !$0.key.hasPrefix("x-") } ?? []
        var operations: [Operation] = []
        for (path, item) in pathItems {
            for method in ["get", "head", "post", "put", "patch", "delete", "options", "trace"] {
                if let value = item[method] { operations.append(Operation(path: path, method: method.uppercased(), value: value)) }
            }
        }
        let codes = root.oaPointer("#/components/schemas/Problem/properties/code/enum")?.oaArray?.compactMap(\.stringValue) ?? []
        self.root = root
        self.operations = operations
        self.paths = pathItems.map(\.key)
        self.problemCodes = Set(codes)
    }

    public func pathItem(_ path: String) -> JSONValue { root["paths"]?[path] ?? .null }

    public func methods(at path: String) -> Set<String> { Set(operations.filter { $0.path == path }.map(\.method)) }

    public func operation(_ method: String, _ path: String) -> Operation? {
        operations.first { $0.method == method && $0.path == path }
    }

    public func operation(id: String) -> Operation? { operations.first { $0.id == id } }

    /// The operation's responses by status, references resolved.
    public func responses(of op: Operation) -> [(Int, JSONValue)] {
        (op.value["responses"]?.oaMembers ?? []).compactMap { member in
            Int(member.key).map { ($0, resolve(member.value)) }
        }
    }

    /// `value` with `$ref`s followed.
    public func resolve(_ value: JSONValue) -> JSONValue {
        var value = value
        while let ref = value["$ref"]?.stringValue, let target = root.oaPointer(ref) { value = target }
        return value
    }

    public func int(_ pointer: String) throws -> Int {
        guard let number = root.oaPointer(pointer)?.numberValue else { throw AppError("\(pointer) is missing from the document") }
        return Int(number)
    }
}

// MARK: - A validator for the JSON Schema subset the document uses

public struct SchemaValidator {
    public let spec: OpenAPISpec
    public init(spec: OpenAPISpec) { self.spec = spec }
    public static let annotations: Set<String> = [
        "description", "title", "format", "examples", "example", "default", "deprecated",
        "readOnly", "writeOnly", "$comment", "minContains", "maxContains"
    ]

    /// Violations of `schema` by `value`; unsupported keywords are violations too, so the
    /// document cannot outgrow the check silently.
    public func errors(_ value: JSONValue, _ schema: JSONValue, _ path: String = "$") -> [String] {
        if schema == .bool(true) { return [] }
        if schema == .bool(false) { return ["\(path): nothing is allowed here"] }
        guard case .object(let s) = schema else { return ["\(path): the schema is not an object"] }
        var errors: [String] = []
        for (keyword, argument) in s.members {
            if keyword.hasPrefix("x-") || Self.annotations.contains(keyword) { continue }
            switch keyword {
            case "$ref":
                guard let ref = argument.stringValue, let target = spec.root.oaPointer(ref) else {
                    errors.append("\(path): unresolved $ref")
                    continue
                }
                errors += self.errors(value, target, path)
            case "type":
                let types = argument.stringValue.map { [$0] } ?? argument.oaArray?.compactMap(\.stringValue) ?? []
                if !types.contains(where: { Self.has(value, type: $0) }) { errors.append("\(path): not of type \(types)") }
            case "enum":
                if !(argument.oaArray ?? []).contains(value) { errors.append("\(path): not one of the enum") }
            case "const":
                if value != argument { errors.append("\(path): not the constant") }
            case "properties":
                guard case .object(let object) = value else { continue }
                for (name, propertySchema) in argument.oaMembers ?? [] {
                    if let member = object[name] { errors += self.errors(member, propertySchema, "\(path).\(name)") }
                }
            case "additionalProperties":
                guard case .object(let object) = value else { continue }
                let known = Set(s["properties"]?.oaMembers?.map(\.key) ?? [])
                for (name, member) in object.members where !known.contains(name) {
                    errors += self.errors(member, argument, "\(path).\(name)")
                }
            case "required":
                guard case .object(let object) = value else { continue }
                for name in argument.oaArray?.compactMap(\.stringValue) ?? [] where object[name] == nil {
                    errors.append("\(path): \(name) is required")
                }
            case "minProperties", "maxProperties":
                guard case .object(let object) = value, let bound = argument.numberValue else { continue }
                let count = Double(object.members.count)
                if keyword == "minProperties" ? count < bound : count > bound { errors.append("\(path): \(keyword) \(bound)") }
            case "prefixItems":
                guard case .array(let elements) = value else { continue }
                for (i, itemSchema) in (argument.oaArray ?? []).enumerated() where i < elements.count {
                    errors += self.errors(elements[i], itemSchema, "\(path)[\(i)]")
                }
            case "items":
                guard case .array(let elements) = value else { continue }
                let start = s["prefixItems"]?.oaArray?.count ?? 0
                for (i, element) in elements.enumerated() where i >= start {
                    errors += self.errors(element, argument, "\(path)[\(i)]")
                }
            case "contains":
                guard case .array(let elements) = value else { continue }
                let matching = Double(elements.filter { self.errors($0, argument).isEmpty }.count)
                if matching < (s["minContains"]?.numberValue ?? 1) || matching > (s["maxContains"]?.numberValue ?? .infinity) {
                    errors.append("\(path): contains \(matching) matching items")
                }
            case "minItems", "maxItems":
                guard case .array(let elements) = value, let bound = argument.numberValue else { continue }
                let count = Double(elements.count)
                if keyword == "minItems" ? count < bound : count > bound { errors.append("\(path): \(keyword) \(bound)") }
            case "uniqueItems":
                guard case .array(let elements) = value, argument == .bool(true) else { continue }
                for i in elements.indices where elements[..<i].contains(elements[i]) { errors.append("\(path)[\(i)]: repeated") }
            case "minLength", "maxLength":
                guard case .string(let text) = value, let bound = argument.numberValue else { continue }
                let count = Double(text.unicodeScalars.count)
                if keyword == "minLength" ? count < bound : count > bound { errors.append("\(path): \(keyword) \(bound)") }
            case "pattern":
                guard case .string(let text) = value, let pattern = argument.stringValue else { continue }
                guard let regex = try? NSRegularExpression(pattern: pattern) else {
                    errors.append("\(path): bad pattern \(pattern)")
                    continue
                }
                if regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil {
                    errors.append("\(path): does not match \(pattern)")
                }
            case "minimum", "maximum":
                guard case .number(let number) = value, let bound = argument.numberValue else { continue }
                if keyword == "minimum" ? number < bound : number > bound { errors.append("\(path): \(keyword) \(bound)") }
            case "oneOf":
                let passing = (argument.oaArray ?? []).filter { self.errors(value, $0, path).isEmpty }.count
                if passing != 1 { errors.append("\(path): matches \(passing) oneOf branches") }
            case "anyOf":
                if !(argument.oaArray ?? []).contains(where: { self.errors(value, $0, path).isEmpty }) {
                    errors.append("\(path): matches no anyOf branch")
                }
            case "allOf":
                for branch in argument.oaArray ?? [] { errors += self.errors(value, branch, path) }
            case "not":
                if self.errors(value, argument, path).isEmpty { errors.append("\(path): matches a not schema") }
            default:
                errors.append("\(path): the validator does not support keyword \(keyword)")
            }
        }
        return errors
    }

    public static func has(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null),
            ("number", .number):
            return true
        case ("integer", .number(let n)): return n == n.rounded() && n.isFinite
        default: return false
        }
    }
}

// MARK: - JSON helpers

extension JSONValue {
    public var oaArray: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var oaMembers: [(key: String, value: JSONValue)]? { if case .object(let o) = self { return o.members } else { return nil } }

    /// The value at a local JSON pointer (`#/components/schemas/Problem`).
    public func oaPointer(_ pointer: String) -> JSONValue? {
        guard pointer.hasPrefix("#") else { return nil }
        var value: JSONValue? = self
        for token in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: true) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if case .array? = value, let index = Int(key) { value = value?[index] } else { value = value?[key] }
        }
        return value
    }
}

/// What in `value` breaks the schema `components/schemas/<name>` of openapi.json, for tests of
/// other files that check a live answer against the document.
public func openAPISchemaErrors(_ value: JSONValue, schema name: String) throws -> [String] {
    SchemaValidator(spec: try OpenAPISpec.load()).errors(value, JSONValue.object(["$ref": .string("#/components/schemas/\(name)")]))
}
