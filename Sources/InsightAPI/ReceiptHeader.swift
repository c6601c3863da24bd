import Crypto
import InsightDomain

/// The `Insight-Receipt` header of an answer (docs/api.md, "Receipts"): an RFC 8941 dictionary
/// `head="<compact JWS>", index=<leaf index>, path=(:<hash>: :<hash>: …)`, the audit path's
/// hashes as byte sequences (base64), the leaf's neighbour first. The body itself stays the leaf.
enum ReceiptHeader {
    static let name = "Insight-Receipt"

    /// The header's value, written into one buffer (it is made for every answer). The JWS is
    /// base64url and dots: nothing in it needs escaping.
    static func value(of receipt: Receipt) -> String {
        var out = [UInt8]()
        out.reserveCapacity(receipt.head.jws.utf8.count + 40 + (Int.bitWidth - receipt.head.head.size.leadingZeroBitCount) * 47)
        out.append(contentsOf: #"head=""#.utf8)
        out.append(contentsOf: receipt.head.jws.utf8)
        out.append(contentsOf: #"", index="#.utf8)
        out.append(contentsOf: String(receipt.index).utf8)
        out.append(contentsOf: ", path=(".utf8)
        var first = true
        receipt.visitPath { hash in
            if !first { out.append(UInt8(ascii: " ")) }
            first = false
            out.append(UInt8(ascii: ":"))
            Base64.append(hash, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        out.append(UInt8(ascii: ")"))
        return String(decoding: out, as: UTF8.self)
    }
}
