import Crypto
import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    /// `GET /v1/receipts/heads`: the caller's own tenant's and environment's chains only.
    /// Without `instance`, the latest head of each of them (one per instance: where each chain
    /// stands), in the order of instance names from the `from`th (default 0); with it, that
    /// instance's chain from sequence `from` (default 0). Either way at most `limit` heads
    /// (1-1000, default 100), and `next`, the path of the following page, while there is one:
    /// the same parameters page both lists, so every request the document allows is answered.
    /// A page costs a token (`Route.quotaCost`) and is read off the event loop.
    func receiptHeads(_ exchange: Exchange) throws {
        let caller = try exchange.authenticated()
        let query = try QueryParameters(exchange.request.query, allowed: ["instance", "from", "limit"])
        guard let service = useCases.receipts else {
            throw Problem(503, .serverError, "The receipt log is not available on this instance.")
        }
        let instance = query.value("instance")
        if let instance, instance.isEmpty { throw Problem.invalid("instance", "must name an instance") }
        let from = try Self.integer(query.value("from"), "from", default: 0, in: 0...Int64.max)
        let limits = ReceiptLogService.limits
        let limit = Int(
            try Self.integer(
                query.value("limit"), "limit", default: Int64(ReceiptLogService.defaultLimit),
                in: Int64(limits.lowerBound)...Int64(limits.upperBound)))
        let answered = exchange
        guard let instance else {
            return service.latest(for: caller, resume: exchange.resume) { result in
                answered.complete(result) { chains in
                    // A tenant has a chain per instance that served it: a handful, all read.
                    let start = Int(min(from, Int64(chains.count)))
                    let page = chains[start...].prefix(limit)
                    var object = JSONObject()
                    object.append("heads", .array(page.map(Self.render)))
                    if start + page.count < chains.count {
                        object.append("next", .string("/v1/receipts/heads?from=\(start + page.count)&limit=\(limit)"))
                    }
                    return Self.json(200, .object(object))
                }
            }
        }
        service.chain(of: instance, for: caller, from: from, limit: limit, resume: exchange.resume) { result in
            answered.complete(result) { page in
                var object = JSONObject()
                object.append("heads", .array(page.heads.map(Self.render)))
                if let next = page.next {
                    object.append("next", .string("/v1/receipts/heads?instance=\(instance)&from=\(next)&limit=\(limit)"))
                }
                return Self.json(200, .object(object))
            }
        }
    }

    /// A whole number in `range` written in decimal digits, or `fallback` when absent.
    static func integer(_ text: String?, _ name: String, default fallback: Int64, in range: ClosedRange<Int64>) throws(Problem) -> Int64 {
        guard let text else { return fallback }
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = Int64(text), range.contains(value)
        else {
            throw Problem.invalid(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A head as the log lists it: its fields, and the compact JWS that signs them.
    static func render(_ signed: SignedHead) -> JSONValue {
        let head = signed.head
        var object = JSONObject()
        object.append("instance", .string(head.instance))
        if let tenant = head.tenant, let environment = head.environment {
            object.append("tenant", .string(tenant))
            object.append("environment", .string(environment))
        }
        object.append("sequence", .number(Double(head.sequence)))
        object.append("size", .number(Double(head.size)))
        object.append("root", .string(Base64URL.encode(head.root)))
        object.append("previous", head.previous.map { .string(Base64URL.encode($0)) } ?? .null)
        object.append("time", .number(Double(head.time)))
        object.append("head", .string(signed.jws))
        return .object(object)
    }
}
