import Foundation

extension Interaction {
    /// The members of each object of an interaction in `openapi/openapi.json` (every one closed:
    /// `additionalProperties: false`) and, for a member that is an object (or an array of
    /// objects, `[]`), its schema. `summary`'s feature names are insightd's to judge (a 422 naming
    /// the feature).
    static let members: [String: [String: String]] = [
        "Interaction": ["events": "InteractionEvent[]", "summary": "", "device": "DeviceFacts", "source": "InteractionSource"],
        "InteractionEvent": ["t": "", "type": "", "field": ""],
        "DeviceFacts": ["activeCall": "", "callStartedBeforeSession": "", "screenSharing": "", "remoteAccessApp": ""],
        "InteractionSource": ["kit": "", "version": "", "platform": "", "droppedEvents": ""]
    ]

    /// The capture kit's object forwarded unchanged: the JSON the kit produced (the web kit's
    /// `session.finish()`, posted by your page to your backend), as the interaction of an
    /// evaluation.
    ///
    /// A member the API lacks throws ``EvaluationError/contextInvalid(field:detail:)`` naming it by
    /// its path, before anything is sent: `interaction.interaction` for the kit's object wrapped
    /// once too often, `interaction.events[2].feild` for a misspelt name. `JSONDecoder` would
    /// drop such a member without a word, and an interaction that lost its events is answered
    /// `unknown`. JSON of another shape throws the same error naming `interaction`.
    public init(json: Data) throws(EvaluationError) {
        let tree: Any
        do {
            tree = try JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])
        } catch {
            throw .contextInvalid(field: "interaction", detail: "not JSON: \(error.localizedDescription)")
        }
        guard tree is [String: Any] else { throw .contextInvalid(field: "interaction", detail: "not a JSON object") }
        try Self.checkMembers(tree, schema: "Interaction", path: "interaction")
        let wire: WireEvaluationRequest.WireInteraction
        do {
            wire = try JSONDecoder().decode(WireEvaluationRequest.WireInteraction.self, from: json)
        } catch {
            throw .contextInvalid(field: "interaction", detail: "not an Interaction: \(error)")
        }
        self.init(
            events: wire.events?.map {
                InteractionEvent(at: $0.t, InteractionEventType(rawValue: $0.type), field: $0.field.map(InteractionField.init(rawValue:)))
            },
            summary: wire.summary.map(InteractionSummary.init),
            device: wire.device.map {
                DeviceFacts(
                    activeCall: $0.activeCall, callStartedBeforeSession: $0.callStartedBeforeSession,
                    screenSharing: $0.screenSharing, remoteAccessApp: $0.remoteAccessApp)
            },
            source: wire.source.map {
                InteractionSource(
                    kit: $0.kit, version: $0.version, platform: ClientPlatform(rawValue: $0.platform), droppedEvents: $0.droppedEvents)
            })
    }

    /// Throws for the first member of `value` (at `path`) that `schema` lacks, in name order.
    static func checkMembers(_ value: Any, schema: String, path: String) throws(EvaluationError) {
        if schema.hasSuffix("[]") {
            for (index, item) in (value as? [Any] ?? []).enumerated() {
                try checkMembers(item, schema: String(schema.dropLast(2)), path: "\(path)[\(index)]")
            }
            return
        }
        // Another type is a type error the decoder names.
        guard let object = value as? [String: Any], let members = members[schema] else { return }
        for name in object.keys.sorted() {
            let at = "\(path).\(name)"
            guard let child = members[name] else {
                throw .contextInvalid(
                    field: at, detail: "unknown member \(at): \(schema) has \(members.keys.sorted().joined(separator: ", "))")
            }
            if !child.isEmpty, let member = object[name] { try checkMembers(member, schema: child, path: at) }
        }
    }
}
