import CoachingModel
@testable import InsightAPI
import InsightServices
import JSON
import XCTest

/// Walks `EvaluationSchema` and holds both decoders to every member and limit it states: each
/// member at its limits is read by the byte reader and decoded by the tree path into the same
/// request (and changes it: the value lands somewhere), and one past each limit is declined by
/// the byte reader and refused by the tree path with the problem that names the member. The
/// bodies come from the table, so a member added to it is covered here without a new test.
final class EvaluationSchemaTests: XCTestCase {
    private enum Step { case key(String), index(Int) }

    private var checked = 0

    func testBothDecodersHoldEveryMemberOfTheSchemaToItsLimits() {
        // `events` and `summary` may not come together: the table is walked once with each.
        for left in ["interaction.summary", "interaction.events"] {
            let fields = EvaluationSchema.root.fields
            let base = sample(.object(fields), path: "", leaving: left)
            assertAccepted(base, in: base, changes: false)
            walk(fields, at: [], path: "", in: base, leaving: left)
        }
        // A floor, so that a walk that stops early fails: every member and limit is checked.
        XCTAssertGreaterThan(checked, 150)
    }

    /// The table's view of the body matches the contract's member names at the top level.
    func testTheTableListsTheContractsMembers() {
        XCTAssertEqual(
            EvaluationSchema.root.names,
            ["requestId", "operationCategory", "insights", "subject", "interaction", "transaction", "initiator"])
        XCTAssertEqual(EvaluationSchema.interaction.names, ["events", "device", "summary", "source"])
        XCTAssertEqual(EvaluationSchema.source.names, ["kit", "version", "platform", "droppedEvents"])
    }

    // MARK: - Walking the table

    private func walk(_ fields: [BodyField], at steps: [Step], path: String, in base: JSONValue, leaving left: String) {
        let objectField = path.isEmpty ? "(body)" : path
        assertRefused(
            editing(base, at: steps + [.key("zzUnknown")], to: .number(1)), in: base, field: ObjectReader.join(path, "zzUnknown"),
            detail: "the known fields are \(fields.map(\.name).joined(separator: ", "))")
        if !steps.isEmpty {
            assertRefused(editing(base, at: steps, to: .number(1)), in: base, field: objectField, detail: "must be an object, not a number")
        }
        for field in fields {
            let memberPath = path.isEmpty ? field.name : "\(path).\(field.name)"
            guard memberPath != left else { continue }
            let at = steps + [.key(field.name)]
            // `null` means absent: an optional member sent as null is left out, a required one is missing.
            if field.required {
                assertRefused(editing(base, at: at, to: nil), in: base, field: memberPath, detail: "is required")
                assertRefused(editing(base, at: at, to: JSONValue.null), in: base, field: memberPath, detail: "is required")
            } else {
                assertAccepted(editing(base, at: at, to: nil), in: base, changes: false)
                assertAccepted(editing(base, at: at, to: JSONValue.null), in: base, changes: false)
                XCTAssertEqual(
                    describe(try! EvaluationRequest.decode(body: JSONWriter.bytes(editing(base, at: at, to: JSONValue.null)))),
                    describe(try! EvaluationRequest.decode(body: JSONWriter.bytes(editing(base, at: at, to: nil)))),
                    "\(memberPath): null is absent")
            }
            switch field.kind {
            case .string(let maxLength):
                assertAccepted(editing(base, at: at, to: .string(String(repeating: "a", count: maxLength))), in: base)
                assertRefused(
                    editing(base, at: at, to: .string(String(repeating: "a", count: maxLength + 1))), in: base,
                    field: memberPath, detail: "must be at most \(maxLength) characters")
                assertRefused(editing(base, at: at, to: .string("")), in: base, field: memberPath, detail: "must not be empty")
            case .token(let maxLength):
                assertAccepted(editing(base, at: at, to: .string(String(repeating: "a", count: maxLength))), in: base)
                assertAccepted(editing(base, at: at, to: .string("Kit_2.0+b-1")), in: base)
                assertRefused(
                    editing(base, at: at, to: .string(String(repeating: "a", count: maxLength + 1))), in: base,
                    field: memberPath, detail: "must be at most \(maxLength) characters")
                assertRefused(editing(base, at: at, to: .string("")), in: base, field: memberPath, detail: "must not be empty")
                for text in ["two words", "a/b", "ä", "a\"b", "{x}"] {
                    assertRefused(
                        editing(base, at: at, to: .string(text)), in: base, field: memberPath,
                        detail: "must hold only letters, digits")
                }
                assertRefused(editing(base, at: at, to: .number(1)), in: base, field: memberPath, detail: "must be a string, not a number")
            case .integer(let range):
                let refusal = "must be an integer from \(range.lowerBound) to \(range.upperBound)"
                assertAccepted(editing(base, at: at, to: .number(Double(range.upperBound))), in: base)
                assertAccepted(editing(base, at: at, to: .number(Double(range.lowerBound))), in: base, changes: false)
                assertRefused(
                    editing(base, at: at, to: .number(Double(range.upperBound) + 1)), in: base, field: memberPath, detail: refusal)
                assertRefused(
                    editing(base, at: at, to: .number(Double(range.lowerBound) - 1)), in: base, field: memberPath, detail: refusal)
            case .boolean:
                assertAccepted(editing(base, at: at, to: .bool(false)), in: base)
                assertRefused(editing(base, at: at, to: .number(1)), in: base, field: memberPath, detail: "must be a boolean, not a number")
            case .oneOf(let names):
                for (i, name) in names.enumerated() {
                    assertAccepted(editing(base, at: at, to: .string(name)), in: base, changes: i > 0)
                }
                assertRefused(
                    editing(base, at: at, to: .string("zzUnknown")), in: base, field: memberPath,
                    detail: "must be one of \(names.joined(separator: ", "))")
            case .oneOfOrSkipped(let names, let maxLength):
                for (i, name) in names.enumerated() {
                    assertAccepted(editing(base, at: at, to: .string(name)), in: base, changes: i > 0)
                }
                // Another name skips its object (and says so), whatever its length up to the limit.
                assertAccepted(editing(base, at: at, to: .string("zzUnknown")), in: base)
                assertAccepted(editing(base, at: at, to: .string(String(repeating: "z", count: maxLength))), in: base)
                assertRefused(
                    editing(base, at: at, to: .string(String(repeating: "z", count: maxLength + 1))), in: base,
                    field: memberPath, detail: "must be at most \(maxLength) characters")
                for text in ["two words", "a/b", "ä"] {
                    assertRefused(
                        editing(base, at: at, to: .string(text)), in: base, field: memberPath,
                        detail: "must be one of \(names.joined(separator: ", ")), or another name")
                }
            case .namesOf(let names, let count):
                assertAccepted(editing(base, at: at, to: .array(names.map { .string($0) })), in: base)
                assertAccepted(editing(base, at: at, to: .array([])), in: base)
                let refusal = "must have \(count.lowerBound) to \(count.upperBound) elements"
                assertRefused(
                    editing(base, at: at, to: .array(Array(repeating: .string(names[0]), count: count.upperBound + 1))),
                    in: base, field: memberPath, detail: refusal)
                assertRefused(
                    editing(base, at: at, to: .array([.string(names[0]), .string("zzUnknown")])), in: base,
                    field: "\(memberPath)[1]", detail: "must be one of \(names.joined(separator: ", "))")
                assertRefused(
                    editing(base, at: at, to: .array([.number(1)])), in: base,
                    field: "\(memberPath)[0]", detail: "must be one of")
                assertRefused(
                    editing(base, at: at, to: .string(names[0])), in: base, field: memberPath,
                    detail: "must be an array, not a string")
            case .object(let members):
                walk(members, at: at, path: memberPath, in: base, leaving: left)
            case .array(let members, let count):
                guard case .array(let elements) = value(in: base, at: at), let element = elements.first else {
                    return XCTFail("no sample element for \(memberPath)")
                }
                let refusal = "must have \(count.lowerBound) to \(count.upperBound) elements"
                assertAccepted(editing(base, at: at, to: .array(Array(repeating: element, count: count.upperBound))), in: base)
                assertRefused(
                    editing(base, at: at, to: .array(Array(repeating: element, count: count.upperBound + 1))), in: base,
                    field: memberPath, detail: refusal)
                if count.lowerBound > 0 {
                    assertRefused(
                        editing(base, at: at, to: .array(Array(repeating: element, count: count.lowerBound - 1))), in: base,
                        field: memberPath, detail: refusal)
                }
                walk(members, at: at + [.index(0)], path: "\(memberPath)[0]", in: base, leaving: left)
            case .features(let max):
                let all = JSONObject(Feature.allCases.map { (key: $0.name, value: JSONValue.number(1)) })
                assertAccepted(editing(base, at: at, to: .object(all)), in: base)
                let over = JSONObject((0...max).map { (key: "f\($0)", value: JSONValue.number(1)) })
                assertRefused(
                    editing(base, at: at, to: .object(over)), in: base, field: memberPath,
                    detail: "must have at most \(max) features")
            }
        }
    }

    /// A valid value of `kind`: every member of an object present (but `left`), the shortest
    /// strings, the lowest integers, `true`, the first name, one array element, one feature.
    private func sample(_ kind: BodyKind, path: String, leaving left: String) -> JSONValue {
        switch kind {
        case .string, .token: return .string("a")
        case .integer(let range): return .number(Double(range.lowerBound))
        case .boolean: return .bool(true)
        case .oneOf(let names), .oneOfOrSkipped(let names, _): return .string(names[0])
        case .namesOf(let names, _): return .array([.string(names[0])])
        case .object(let fields):
            return .object(
                JSONObject(
                    fields.compactMap { field in
                        let memberPath = path.isEmpty ? field.name : "\(path).\(field.name)"
                        return memberPath == left ? nil : (key: field.name, value: sample(field.kind, path: memberPath, leaving: left))
                    }))
        case .array(let fields, let count):
            let element = sample(.object(fields), path: "\(path)[0]", leaving: left)
            return .array(Array(repeating: element, count: Swift.max(1, count.lowerBound)))
        case .features: return .object(JSONObject([(key: Feature.allCases[0].name, value: .number(1))]))
        }
    }

    private func value(in document: JSONValue, at steps: [Step]) -> JSONValue? {
        guard let step = steps.first else { return document }
        switch (step, document) {
        case (.key(let key), .object(let object)): return object[key].flatMap { value(in: $0, at: Array(steps.dropFirst())) }
        case (.index(let i), .array(let elements)): return value(in: elements[i], at: Array(steps.dropFirst()))
        default: return nil
        }
    }

    /// `document` with the value at `steps` replaced (appended if absent), or removed when nil.
    private func editing(_ document: JSONValue, at steps: [Step], to new: JSONValue?) -> JSONValue {
        guard let step = steps.first else { return new ?? .null }
        let rest = Array(steps.dropFirst())
        switch (step, document) {
        case (.key(let key), .object(let object)):
            var members = object.members
            if let i = members.firstIndex(where: { $0.key == key }) {
                if rest.isEmpty, new == nil {
                    members.remove(at: i)
                } else {
                    members[i].value = editing(members[i].value, at: rest, to: new)
                }
            } else if rest.isEmpty, let new {
                members.append((key: key, value: new))
            }
            return .object(JSONObject(members))
        case (.index(let i), .array(var elements)):
            elements[i] = editing(elements[i], at: rest, to: new)
            return .array(elements)
        default:
            XCTFail("no place for \(steps) in \(JSONWriter.string(document))")
            return document
        }
    }

    // MARK: - The decoders

    /// The request as text that can be compared (a summary's features and unknown name, not
    /// its bookkeeping).
    private func describe(_ request: EvaluationRequest) -> String {
        var rest = request
        rest.interaction = .none
        switch request.interaction {
        case .none: return "\(rest) none"
        case .events(let events, let device): return "\(rest) events \(events) \(device)"
        case .summary(let summary, let device):
            return
                "\(rest) summary \(summary.features.map { "\($0.0.name)=\($0.1.bitPattern)" }) \(summary.unknown.map { "\($0.name)@\($0.position)" } ?? "-") \(device)"
        }
    }

    /// Both decoders read `document` into the same request; `changes`: it differs from `base`'s.
    private func assertAccepted(
        _ document: JSONValue, in base: JSONValue, changes: Bool = true,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        checked += 1
        let bytes = JSONWriter.bytes(document), text = String(JSONWriter.string(document).prefix(600))
        guard let fast = EvaluationBodyReader.read(bytes) else {
            return XCTFail("the byte reader declined \(text)", file: file, line: line)
        }
        do {
            let parsed = try EvaluationRequest.decodeParsing(bytes)
            let tree = try EvaluationRequest.decode(try Problem.parseBody(bytes))
            XCTAssertEqual(describe(fast), describe(parsed), text, file: file, line: line)
            XCTAssertEqual(describe(fast), describe(tree), text, file: file, line: line)
            if changes, let original = EvaluationBodyReader.read(JSONWriter.bytes(base)) {
                XCTAssertNotEqual(describe(fast), describe(original), "the value went nowhere: \(text)", file: file, line: line)
            }
        } catch {
            XCTFail("the tree path refused (\(error.field ?? "-"): \(error.detail)) \(text)", file: file, line: line)
        }
    }

    /// The byte reader declines `document`, and every path refuses it with one problem naming
    /// `field`, whose detail contains `detail`.
    private func assertRefused(
        _ document: JSONValue, in base: JSONValue, field: String, detail: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        checked += 1
        let bytes = JSONWriter.bytes(document), text = String(JSONWriter.string(document).prefix(600))
        XCTAssertNil(EvaluationBodyReader.read(bytes), "the byte reader read \(text)", file: file, line: line)
        let problems = [
            Result { () throws(Problem) in try EvaluationRequest.decode(body: bytes) },
            Result { () throws(Problem) in try EvaluationRequest.decodeParsing(bytes) },
            Result { () throws(Problem) in try EvaluationRequest.decode(try Problem.parseBody(bytes)) }
        ].map { result -> Problem? in
            if case .failure(let problem) = result { return problem }
            return nil
        }
        guard let problem = problems[0] else { return XCTFail("accepted \(text)", file: file, line: line) }
        XCTAssertEqual(problems[1], problem, text, file: file, line: line)
        XCTAssertEqual(problems[2], problem, text, file: file, line: line)
        XCTAssertEqual(problem.status, 422, text, file: file, line: line)
        XCTAssertEqual(problem.field, field, text, file: file, line: line)
        XCTAssertTrue(problem.detail.contains(detail), "\(problem.detail) does not say \(detail): \(text)", file: file, line: line)
    }
}
