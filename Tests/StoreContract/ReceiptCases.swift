import Crypto
import Dispatch
import InsightDomain
import Synchronization

// Receipts (docs/api.md, "Receipts", migration 0018): every stored evaluation completes with a
// receipt whose audit path leads from its answer to its head's signed root; each instance's heads
// form a chain; heads keep their leaves and go, whole and oldest first, with retention.

/// Whether `jws` is signed by one of `keys`' published keys.
func signatureHolds(_ jws: String, keys: SigningKeys) -> Bool {
    let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let signature = Base64URL.decode(parts[2]) else { return false }
    let input = Array("\(parts[0]).\(parts[1])".utf8)
    return keys.published().contains { key in
        Ed25519VerifyingKey(rawRepresentation: key.publicKey)?.isValidSignature(signature, for: input) == true
    }
}

let receiptCases: [ContractCase] = [
    contractCase(.receipts, "each answer's receipt leads from its bytes to its head's signed root") { s in
        try s.caller("c1")
        // Sent together, so that a writer that batches may put several in one tree.
        let receipts = Mutex<[String: Result<Receipt, StoreFailure>]>([:])
        let done = DispatchSemaphore(value: 0)
        let ids = (0..<6).map { "e\($0)" }
        for id in ids {
            s.ledger.record(StoreSet.evaluation(id), answer: Array("answer of \(id)".utf8)) { result in
                receipts.withLock { $0[id] = result }
                done.signal()
            }
        }
        for _ in ids { guard done.wait(timeout: .now() + 10) == .success else { throw ContractFailure(description: "no completion") } }
        for id in ids {
            guard case .success(let receipt) = receipts.withLock({ $0[id] }) else { throw ContractFailure(description: "\(id) failed") }
            let head = receipt.head.head
            try expectEqual(head.instance, s.receipts.instance, "the writer's instance")
            try expectEqual(
                MerkleTree.root(
                    fromAuditPath: receipt.path, leafHash: MerkleTree.leafHash(of: Array("answer of \(id)".utf8)),
                    index: receipt.index, size: head.size), head.root, "\(id)'s path")
            try expect(
                MerkleTree.root(
                    fromAuditPath: receipt.path, leafHash: MerkleTree.leafHash(of: Array("answer of x".utf8)),
                    index: receipt.index, size: head.size) != head.root, "another body does not lead to the root")
            try expect(signatureHolds(receipt.head.jws, keys: s.receipts.keys), "the head is signed by the writer's key")
            try expectEqual(SignedHead(jws: receipt.head.jws)?.head, head, "the JWS carries the head")
        }
    },

    contractCase(.receipts, "an instance's heads form a chain, are listed from any point and keep their leaves") { s in
        try s.caller("c1")
        for id in ["e1", "e2", "e3"] { try s.record(id) }
        let heads = try s.receiptLog.heads(of: s.chain(), from: 0, limit: 100, withLeaves: true)
        try expectEqual(heads.map(\.signed.head.sequence), [0, 1, 2], "one head per commit, numbered from 0")
        try expectEqual(heads[0].signed.head.previous, nil, "the first head follows none")
        for k in 1..<heads.count {
            try expectEqual(heads[k].signed.head.previous, heads[k - 1].signed.hash, "head \(k) names the one before")
            try expect(heads[k].signed.head.time >= heads[k - 1].signed.head.time, "time never goes back")
        }
        for head in heads {
            let hashes = stride(from: 0, to: head.leaves.count, by: 32).map { Array(head.leaves[$0..<$0 + 32]) }
            try expectEqual(hashes.count, head.signed.head.size, "one leaf hash per answer")
            try expectEqual(MerkleTree(leafHashes: hashes)?.root, head.signed.head.root, "the stored leaves give the root")
            try expect(signatureHolds(head.signed.jws, keys: s.receipts.keys), "stored signed")
        }
        try expectEqual(
            try s.receiptLog.heads(of: s.chain(), from: 1, limit: 1, withLeaves: false)
                .map(\.signed.head.sequence), [1], "from a point, limited")
        try expectEqual(
            try s.receiptLog.heads(of: s.chain(), from: 1, limit: 1, withLeaves: false)
                .map(\.leaves), [[]], "leaves only when asked")
        try expectEqual(
            try s.receiptLog.heads(
                of: ReceiptChain(instance: "another", tenant: "default", environment: "production"), from: 0, limit: 10, withLeaves: false
            ).count, 0)
        try expectEqual(try s.receiptLog.latestHeads().map(\.head.sequence), [2], "the latest head of each instance")
    },

    contractCase(.receipts, "retention deletes heads made before the cutoff, whole and oldest first") { s in
        try s.caller("c1")
        for id in ["e1", "e2"] { try s.record(id) }
        let heads = try s.receiptLog.heads(of: s.chain(), from: 0, limit: 10, withLeaves: false)
        let report = try value { s.retention.purgeBatch(olderThan: heads[1].signed.head.time, completion: $0) }
        try expectEqual(report.receiptHeads, heads[0].signed.head.time < heads[1].signed.head.time ? 1 : 0)
        let all = try value { s.retention.purgeBatch(olderThan: heads[1].signed.head.time + 1, completion: $0) }
        try expect(all.receiptHeads >= 1, "the rest goes once older than the cutoff")
        try expectEqual(try s.receiptLog.latestHeads().count, 0)
    },

    contractCase(.receipts, "retention deletes a chain's old heads, never another chain's head of the same sequence") { s in
        try s.caller("c1")
        try s.caller("c2", tenant: "globex")
        try s.record("a1")
        let old = try s.receiptLog.heads(of: s.chain(), from: 0, limit: 10, withLeaves: false)[0].signed.head
        // The heads' clock has moved past the first head's millisecond (a condition, not a delay).
        while SystemClock().now() <= old.time {}
        try value { s.ledger.record(StoreSet.evaluation("g1", caller: "c2", tenant: "globex"), answer: [7], completion: $0) }
        let globex = s.chain(tenant: "globex")
        let new = try s.receiptLog.heads(of: globex, from: 0, limit: 10, withLeaves: false)[0].signed.head
        try expectEqual(new.sequence, old.sequence, "head 0 of both chains")
        try expect(new.time > old.time, "made later")
        let report = try value { s.retention.purgeBatch(olderThan: new.time, completion: $0) }
        try expectEqual(report.receiptHeads, 1, "the old head goes")
        try expectEqual(try s.receiptLog.heads(of: s.chain(), from: 0, limit: 10, withLeaves: false).count, 0)
        try expectEqual(
            try s.receiptLog.heads(of: globex, from: 0, limit: 10, withLeaves: false).map(\.signed.head), [new],
            "globex's head 0 stays")
    },

    contractCase(.receipts, "each tenant and environment has a chain of its own; its heads cover only its answers") { s in
        try s.caller("c1")
        try s.caller("c2", tenant: "globex")
        // Sent together, so that a writer that batches commits several tenants' answers at once.
        let answers: [(id: String, caller: String, tenant: String, environment: Environment)] = [
            ("a1", "c1", "default", .production), ("g1", "c2", "globex", .production), ("a2", "c1", "default", .production),
            ("s1", "c1", "default", .sandbox), ("g2", "c2", "globex", .production)
        ]
        let receipts = Mutex<[String: Result<Receipt, StoreFailure>]>([:])
        let done = DispatchSemaphore(value: 0)
        for answer in answers {
            var evaluation = StoreSet.evaluation(answer.id, caller: answer.caller, environment: answer.environment, tenant: answer.tenant)
            if answer.id == "g1" {
                evaluation.retry = RetryEntry(
                    key: [UInt8](repeating: 3, count: 32), digest: [1], eventId: "g1", answer: [2], expiresAt: 2_000)
            }
            s.ledger.record(evaluation, answer: Array("answer \(answer.id)".utf8)) { result in
                receipts.withLock { $0[answer.id] = result }
                done.signal()
            }
        }
        for _ in answers { guard done.wait(timeout: .now() + 10) == .success else { throw ContractFailure(description: "no completion") } }
        for answer in answers {
            guard case .success(let receipt) = receipts.withLock({ $0[answer.id] }) else {
                throw ContractFailure(description: "\(answer.id) failed")
            }
            let head = receipt.head.head
            try expectEqual(head.tenant, answer.tenant, "\(answer.id)'s head names its tenant")
            try expectEqual(head.environment, answer.environment.rawValue, "\(answer.id)'s head names its environment")
            try expectEqual(
                MerkleTree.root(
                    fromAuditPath: receipt.path, leafHash: MerkleTree.leafHash(of: Array("answer \(answer.id)".utf8)),
                    index: receipt.index, size: head.size), head.root, "\(answer.id)'s path")
            try expectEqual(SignedHead(jws: receipt.head.jws)?.head, head, "the payload carries the tenant and environment")
        }
        for (tenant, environment, count) in [("default", Environment.production, 2), ("globex", .production, 2), ("default", .sandbox, 1)] {
            let heads = try s.receiptLog.heads(of: s.chain(tenant: tenant, environment: environment), from: 0, limit: 100, withLeaves: true)
            try expectEqual(heads.first?.signed.head.sequence, 0, "\(tenant)/\(environment)'s chain starts at 0")
            try expectEqual(heads.first?.signed.head.previous, nil, "and follows no head")
            for k in heads.indices.dropFirst() {
                try expectEqual(heads[k].signed.head.sequence, Int64(k), "numbered on its own")
                try expectEqual(heads[k].signed.head.previous, heads[k - 1].signed.hash, "chained on its own")
            }
            try expectEqual(heads.map(\.signed.head.size).reduce(0, +), count, "\(tenant)/\(environment)'s heads cover its answers only")
        }
        let globex = try s.receiptLog.latestHeads(tenant: "globex", environment: "production")
        try expectEqual(globex.count, 1, "one chain of globex in production")
        try expect(globex.allSatisfy { $0.head.tenant == "globex" && $0.head.environment == "production" }, "only globex's")
        try expectEqual(try s.receiptLog.latestHeads().count, 3, "every chain, for the operator")
        try expectEqual(try s.receiptLog.latestHeads(tenant: "initech", environment: "production").count, 0, "a tenant with none")
        let entry = try s.ledger.retryEntry(keys: [[UInt8](repeating: 3, count: 32)], now: 1_500)
        guard case .success(let first) = receipts.withLock({ $0["g1"] }) else { throw ContractFailure(description: "g1 failed") }
        try expectEqual(entry?.firstHead?.signed, first.head, "a retry entry names the head of its own chain")
    }
]
