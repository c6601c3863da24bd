// Fuzz target: POST /v1/evaluations through the real handler, models and store
// (fuzz/support/LiveHandler.swift), then a consumption report for what it answered.
// Input: the request body; odd first bytes use the sandbox key with `Insight-Override` taken
// from the input's last line when it starts with "#".
// Invariants: a documented status, never a 5xx (forced sandbox 503s excepted); a 200 echoes the
// environment, answers every requested insight with a value or an error, and its eventId and
// insightIds accept a consumption report (204).
import HTTPServer
import JSON

private let live = LiveHandler()
private let values: Set<String> = ["unknown", "medium", "high"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var body = Array(UnsafeBufferPointer(start: data, count: size))
    var headers: [(String, String)] = []
    let sandbox = size > 0 && data[0] & 1 == 1
    if sandbox, let newline = body.lastIndex(of: 0x0A), body.index(after: newline) < body.endIndex,
       body[body.index(after: newline)] == UInt8(ascii: "#") {
        headers.append(("Insight-Override", String(decoding: body[(newline + 2)...], as: UTF8.self)))
        body = Array(body[..<newline])
    }
    let response = live.send("POST", "/v1/evaluations", body: body, headers: headers,
                             key: sandbox ? live.sandboxKey : live.key)
    if sandbox, !headers.isEmpty, response.status == 503 || response.status == 429 { return 0 }  // forced by the override
    LiveHandler.checkCommon(response, allowed: [200, 400, 403, 413, 415, 422, 429], context: "POST /v1/evaluations")
    guard response.status == 200 else { return 0 }
    guard case .object(let request)? = try? JSONParser.parse(body), case .array(let asked)? = request["insights"],
          case .object(let answer)? = try? JSONParser.parse(response.body), case .string(let eventId)? = answer["eventId"],
          case .array(let insights)? = answer["insights"] else {
        preconditionFailure("200 without eventId and insights")
    }
    precondition(answer["environment"] == .string(sandbox ? "sandbox" : "production"), "wrong environment")
    precondition(insights.count == asked.count, "\(insights.count) insights for \(asked.count) asked")
    var ids: [JSONValue] = []
    for insight in insights {
        guard case .object(let item) = insight, case .string(let id)? = item["insightId"],
              case .object(let outcome)? = item["outcome"] else { preconditionFailure("malformed insight") }
        if case .string(let value)? = outcome["value"] {
            precondition(values.contains(value), "value \(value)")
        } else {
            guard case .object(let error)? = outcome["error"], case .string? = error["code"] else {
                preconditionFailure("outcome with neither value nor error")
            }
        }
        ids.append(.string(id))
    }
    let report = JSONWriter.bytes(.object(["status": .string("usedEvaluationOnly"), "insightIdsUsed": .array(ids)]))
    let consumed = live.send("POST", "/v1/evaluations/\(eventId)/consumption", body: report,
                             key: sandbox ? live.sandboxKey : live.key)
    precondition(consumed.status == 204, "consumption report for a fresh evaluation answered \(consumed.status)")
    return 0
}
