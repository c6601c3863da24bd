import Foundation
@testable import InsightClient
import XCTest

/// The capture kit's object forwarded unchanged (`Interaction(json:)`): decoded whole, and a
/// member the API lacks refused by its path before anything is sent, where `JSONDecoder` would
/// drop it and the evaluation would be answered `unknown`.
final class InteractionJSONTests: XCTestCase {
    /// The web kit's object, as InsightCapture's `session.finish()` returns it.
    static let kit =
        #"{"events": [{"t": 0, "type": "sessionStart"}, {"t": 1800, "type": "fieldFocus", "field": "payee"}, {"t": 64000, "type": "submit"}], "device": {"activeCall": true}, "source": {"kit": "insight-capture-web", "version": "1.0.0", "platform": "web", "droppedEvents": 0}}"#

    func refusal(_ json: String) -> EvaluationError? {
        do {
            _ = try Interaction(json: Data(json.utf8))
            return nil
        } catch { return error }
    }

    func testTheKitObjectForwardedUnchangedDecodesWhole() throws {
        let interaction = try Interaction(json: Data(Self.kit.utf8))
        XCTAssertEqual(
            interaction.events,
            [
                InteractionEvent(at: 0, .sessionStart), InteractionEvent(at: 1800, .fieldFocus, field: .payee),
                InteractionEvent(at: 64000, .submit)
            ])
        XCTAssertEqual(interaction.device, DeviceFacts(activeCall: true))
        XCTAssertEqual(
            interaction.source, InteractionSource(kit: "insight-capture-web", version: "1.0.0", platform: .web, droppedEvents: 0))
        XCTAssertNil(interaction.summary)
    }

    func testTheKitObjectWrappedTwiceIsRefusedByItsPath() {
        guard case .contextInvalid(let field, let detail)? = refusal(#"{"interaction": \#(Self.kit)}"#) else {
            return XCTFail("not refused")
        }
        XCTAssertEqual(field, "interaction.interaction")
        XCTAssertEqual(detail, "unknown member interaction.interaction: Interaction has device, events, source, summary")
    }

    func testAMisspeltMemberIsRefusedByItsPath() {
        // The Swift client's transaction and device facts are typed (a misspelt name does not
        // compile); JSON forwarded from the kit is where a name can be wrong.
        let misspelt = Self.kit.replacingOccurrences(of: #""field": "payee""#, with: #""feild": "payee""#)
        guard case .contextInvalid(let field, _)? = refusal(misspelt) else { return XCTFail("not refused") }
        XCTAssertEqual(field, "interaction.events[1].feild")
        let device = Self.kit.replacingOccurrences(of: "activeCall", with: "activeCal")
        guard case .contextInvalid(let deviceField, _)? = refusal(device) else { return XCTFail("not refused") }
        XCTAssertEqual(deviceField, "interaction.device.activeCal")
    }

    func testJSONOfAnotherShapeIsRefusedAsTheInteraction() {
        for json in ["[]", "{", #"{"events": [{"t": "soon", "type": "sessionStart"}]}"#] {
            guard case .contextInvalid(let field, _)? = refusal(json) else { return XCTFail("\(json) not refused") }
            XCTAssertEqual(field, "interaction", json)
        }
    }

    /// The member table is openapi/openapi.json's: a member added there is accepted here too.
    func testTheMemberTableIsTheDocument() throws {
        let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("openapi/openapi.json")
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: document)) as? [String: Any])
        let schemas = try XCTUnwrap((root["components"] as? [String: Any])?["schemas"] as? [String: Any])
        for (schema, members) in Interaction.members {
            let properties = try XCTUnwrap((schemas[schema] as? [String: Any])?["properties"] as? [String: Any], schema)
            XCTAssertEqual(Set(members.keys), Set(properties.keys), schema)
        }
    }
}
