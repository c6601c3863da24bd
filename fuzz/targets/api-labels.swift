// Fuzz target: POST /v1/labels through the real handler and store (fuzz/support/LiveHandler.swift).
// Input: the request body. About half the inputs get their first `"insightId":"..."` values
// replaced by insights that exist (so accepted, duplicate and conflict paths are reached).
// Invariants: a documented status, never a 5xx; a 200 has one result per label, in order, each
// with a documented status, and a summary that counts them.
import HTTPServer
import JSON

private let live = LiveHandler()
private let statuses: Set<String> = ["accepted", "duplicate", "conflict", "unknownInsight", "invalid"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var body = Array(UnsafeBufferPointer(start: data, count: size))
    if size > 0, data[0] & 1 == 0 { body = withKnownInsights(body) }
    let key = "fuzz-\(live.nextSequence())"
    let response = live.send("POST", "/v1/labels", body: body, headers: [("Idempotency-Key", key)])
    LiveHandler.checkCommon(response, allowed: [200, 400, 413, 415, 422], context: "POST /v1/labels")
    guard response.status == 200 else { return 0 }
    guard case .object(let request)? = try? JSONParser.parse(body), case .array(let labels)? = request["labels"],
          case .object(let answer)? = try? JSONParser.parse(response.body), case .array(let results)? = answer["results"],
          case .object(let summary)? = answer["summary"] else {
        preconditionFailure("200 for a body without labels, or an answer without results and summary")
    }
    precondition(results.count == labels.count, "\(results.count) results for \(labels.count) labels")
    var counted: [String: Int] = [:]
    for (i, result) in results.enumerated() {
        guard case .object(let item) = result, case .number(let index)? = item["index"], Int(index) == i,
              case .string(let status)? = item["status"], statuses.contains(status) else {
            preconditionFailure("result \(i) is malformed: \(JSONWriter.string(result))")
        }
        counted[status, default: 0] += 1
    }
    for status in statuses {
        guard case .number(let n)? = summary[status], Int(n) == counted[status, default: 0] else {
            preconditionFailure("summary.\(status) does not count the results")
        }
    }
    return 0
}

/// Replaces the value of each `"insightId":"` occurrence with a known insight id.
private func withKnownInsights(_ body: [UInt8]) -> [UInt8] {
    let marker = Array(#""insightId":""#.utf8)
    var out: [UInt8] = []
    var i = 0, n = 0
    while i < body.count {
        if i + marker.count <= body.count, Array(body[i..<i + marker.count]) == marker,
           let close = body[(i + marker.count)...].firstIndex(of: UInt8(ascii: "\"")) {
            out.append(contentsOf: marker)
            out.append(contentsOf: live.knownInsightIds[n % live.knownInsightIds.count].utf8)
            n += 1
            i = close
            continue
        }
        out.append(body[i])
        i += 1
    }
    return out
}
