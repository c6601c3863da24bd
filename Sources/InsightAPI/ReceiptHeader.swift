import Crypto
import InsightDomain

/// The `Insight-Receipt` header of an answer (docs/api.md, "Receipts"): an RFC 8941 dictionary
/// `head="<compact JWS>", index=<leaf index>, path=(:<hash>: :<hash>: …)`, the audit path's
/// hashes as byte sequences (base64), the leaf's neighbour first. The body itself stays the leaf.
enum ReceiptHeader {
    static let name = "Insight-Receipt"

    /// The header's value. The JWS is base64url and dots: nothing in it needs escaping.
    static func value(of receipt: Receipt) -> String {
        let path = receipt.path
        var out = [UInt8]()
        out.reserveCapacity(receipt.head.jws.utf8.count + 32 + path.count * 47)
        out += Array(#"head=""#.utf8)
        out += Array(receipt.head.jws.utf8)
        out += Array(#"", index="#.utf8)
        out += Array(String(receipt.index).utf8)
        out += Array(", path=(".utf8)
        for (k, hash) in path.enumerated() {
            if k > 0 { out.append(UInt8(ascii: " ")) }
            out.append(UInt8(ascii: ":"))
            hash.withUnsafeBytes { Base64.append($0, to: &out) }
            out.append(UInt8(ascii: ":"))
        }
        out.append(UInt8(ascii: ")"))
        return String(decoding: out, as: UTF8.self)
    }
}
