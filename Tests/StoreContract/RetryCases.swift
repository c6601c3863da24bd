import Crypto
import Dispatch
import InsightDomain
import Synchronization

// Retries of an evaluation (docs/api.md, "Retries", migration 0019): an evaluation may keep a
// retry entry under its request's key, stored in its transaction; one live entry per key (a
// second evaluation under a live key is not stored, of two racing exactly one is); an entry
// answers until it expires, and names the head of its first answer, from which that answer's
// receipt is made again without writing anything; a reissued answer (an entry that names no head)
// gets a receipt without storing anything else.

extension StoreSet {
    /// The evaluation `id` with a retry entry under `key`, created at `created`, expiring at `expires`.
    static func retried(_ id: String, key: [UInt8], created: Milliseconds = 1_000, expires: Milliseconds = 2_000) -> EvaluationRecord {
        var evaluation = evaluation(id, created: created, due: expires)
        evaluation.retry = RetryEntry(
            key: key, digest: Array("digest of \(id)".utf8), eventId: id,
            answer: Array("answer of \(id)".utf8), expiresAt: expires)
        return evaluation
    }
}

let retryCases: [ContractCase] = [
    contractCase(.retries, "a retry entry is found by any of its keys until it expires, and by no other key") { s in
        try s.caller("c1")
        let key = [UInt8](repeating: 7, count: 32), other = [UInt8](repeating: 8, count: 32)
        let stored = StoreSet.retried("e1", key: key)
        try value { s.ledger.record(stored, answer: Array("named answer of e1".utf8), completion: $0) }
        var found = try s.ledger.retryEntry(keys: [other, key], now: 1_500)
        found?.firstHead = nil
        try expectEqual(found, stored.retry, "found by its key, second of two")
        try expectEqual(try s.ledger.retryEntry(keys: [other], now: 1_500), nil, "another key finds nothing")
        try expectEqual(try s.ledger.retryEntry(keys: [], now: 1_500), nil, "no key finds nothing")
        try expectEqual(try s.ledger.retryEntry(keys: [key], now: 2_000), nil, "expired at its time")
    },

    contractCase(.retries, "no second evaluation is stored under a live key; of two racing, exactly one is") { s in
        try s.caller("c1")
        let key = [UInt8](repeating: 7, count: 32)
        try value { s.ledger.record(StoreSet.retried("e1", key: key), answer: [1], completion: $0) }
        guard case .failure = try wait({ s.ledger.record(StoreSet.retried("e2", key: key, created: 1_500), answer: [2], completion: $0) })
        else {
            throw ContractFailure(description: "a second evaluation under a live key was stored")
        }
        try expectEqual(try s.report("e2", at: 1_600), .evaluationNotFound, "the refused evaluation left no row")
        try expectEqual(try s.ledger.retryEntry(keys: [key], now: 1_600)?.eventId, "e1", "the first entry stands")
        // Sent together, so that a writer that batches commits them in one batch.
        let racing = [UInt8](repeating: 9, count: 32)
        let results = Mutex<[String: Bool]>([:])
        let done = DispatchSemaphore(value: 0)
        for id in ["r1", "r2", "r3"] {
            s.ledger.record(StoreSet.retried(id, key: racing), answer: Array(id.utf8)) { result in
                results.withLock { $0[id] = (try? result.get()) != nil }
                done.signal()
            }
        }
        for _ in 0..<3 { guard done.wait(timeout: .now() + 10) == .success else { throw ContractFailure(description: "no completion") } }
        let stored = results.withLock { $0.filter(\.value).map(\.key) }
        try expectEqual(stored.count, 1, "exactly one of three racing evaluations is stored")
        try expectEqual(try s.ledger.retryEntry(keys: [racing], now: 1_500)?.eventId, stored.first, "its entry answers")
        for id in ["r1", "r2", "r3"] where id != stored.first {
            try expectEqual(try s.report(id, at: 1_600), .evaluationNotFound, "\(id) left no row")
        }
    },

    contractCase(.retries, "after its entry expired, a key serves a new evaluation") { s in
        try s.caller("c1")
        let key = [UInt8](repeating: 7, count: 32)
        try value { s.ledger.record(StoreSet.retried("e1", key: key), answer: [1], completion: $0) }
        try value { s.ledger.record(StoreSet.retried("e2", key: key, created: 2_500, expires: 3_500), answer: [2], completion: $0) }
        try expectEqual(try s.ledger.retryEntry(keys: [key], now: 2_600)?.eventId, "e2", "the new evaluation's entry")
        try expectEqual(try s.report("e1", at: 2_600), .recorded(.late), "the first evaluation stays")
    },

    contractCase(.retries, "a key's expired entry gives way even when more entries expired than a new one clears") { s in
        try s.caller("c1")
        let keys = (1...3).map { [UInt8](repeating: UInt8($0), count: 32) }
        for (k, key) in keys.enumerated() {
            try value { s.ledger.record(StoreSet.retried("e\(k)", key: key), answer: [UInt8(k)], completion: $0) }
        }
        // All three expired at 2_000; the new evaluation reuses the key whose entry is the last of them.
        try value { s.ledger.record(StoreSet.retried("n1", key: keys[2], created: 2_500, expires: 3_500), answer: [9], completion: $0) }
        try expectEqual(try s.ledger.retryEntry(keys: [keys[2]], now: 2_600)?.eventId, "n1", "the new evaluation's entry")
        try expectEqual(try s.ledger.retryEntry(keys: [keys[0], keys[1]], now: 2_600), nil, "the expired ones answer nothing")
    },

    contractCase(.retries, "an entry names its first answer's head: the receipt made from it is the first, and nothing is written") { s in
        try s.caller("c1")
        // Sent together, so that a writer that batches puts several answers, and entries, in one tree.
        let receipts = Mutex<[String: Result<Receipt, StoreFailure>]>([:])
        let done = DispatchSemaphore(value: 0)
        let ids = (0..<5).map { "e\($0)" }
        for (k, id) in ids.enumerated() {
            let record = k % 2 == 0 ? StoreSet.retried(id, key: [UInt8](repeating: UInt8(k + 1), count: 32)) : StoreSet.evaluation(id)
            s.ledger.record(record, answer: Array("named answer of \(id)".utf8)) { result in
                receipts.withLock { $0[id] = result }
                done.signal()
            }
        }
        for _ in ids { guard done.wait(timeout: .now() + 10) == .success else { throw ContractFailure(description: "no completion") } }
        let before = try s.receiptLog.heads(of: s.chain(), from: 0, limit: 100, withLeaves: true)
        for k in stride(from: 0, to: ids.count, by: 2) {
            let id = ids[k]
            guard case .success(let first) = receipts.withLock({ $0[id] }) else { throw ContractFailure(description: "\(id) failed") }
            let entry = try s.ledger.retryEntry(keys: [[UInt8](repeating: UInt8(k + 1), count: 32)], now: 1_500)
            try expectEqual(entry?.firstHead?.signed, first.head, "\(id)'s entry names the head of its batch")
            let again = entry?.firstHead?.receipt(ofLeaf: MerkleTree.leafHash(of: Array("named answer of \(id)".utf8)))
            try expectEqual(again?.head, first.head, "\(id): the same head")
            try expectEqual(again?.index, first.index, "\(id): the same leaf")
            try expectEqual(again?.path, first.path, "\(id): the same path")
            try expect(
                entry?.firstHead?.receipt(ofLeaf: MerkleTree.leafHash(of: Array("another answer".utf8))) == nil,
                "another answer is no leaf of it")
        }
        let after = try s.receiptLog.heads(of: s.chain(), from: 0, limit: 100, withLeaves: true)
        try expectEqual(after, before, "reading entries wrote no head")
    },

    contractCase(.retries, "of evaluations racing under one key, the stored one's entry names its head") { s in
        try s.caller("c1")
        let racing = [UInt8](repeating: 9, count: 32)
        let results = Mutex<[String: Result<Receipt, StoreFailure>]>([:])
        let done = DispatchSemaphore(value: 0)
        for id in ["r1", "r2", "r3"] {
            s.ledger.record(StoreSet.retried(id, key: racing), answer: Array("answer \(id)".utf8)) { result in
                results.withLock { $0[id] = result }
                done.signal()
            }
        }
        for _ in 0..<3 { guard done.wait(timeout: .now() + 10) == .success else { throw ContractFailure(description: "no completion") } }
        let entry = try s.ledger.retryEntry(keys: [racing], now: 1_500)
        guard let id = entry?.eventId, case .success(let first) = results.withLock({ $0[id] }) else {
            throw ContractFailure(description: "no stored evaluation answers")
        }
        try expectEqual(
            entry?.firstHead?.receipt(ofLeaf: MerkleTree.leafHash(of: Array("answer \(id)".utf8)))?.path, first.path,
            "the stored one's receipt")
    },

    contractCase(.retries, "a reissued answer gets a receipt of a signed head, and nothing else is stored") { s in
        try s.caller("c1")
        try s.record("e1")
        let answer = Array("an answer given again".utf8)
        let receipt = try value { s.ledger.reissue(answer: answer, tenant: Tenant.defaultName, environment: .production, completion: $0) }
        let head = receipt.head.head
        try expectEqual(
            MerkleTree.root(
                fromAuditPath: receipt.path, leafHash: MerkleTree.leafHash(of: answer), index: receipt.index,
                size: head.size), head.root, "the path leads from the answer to the root")
        try expect(signatureHolds(receipt.head.jws, keys: s.receipts.keys), "the head is signed by the writer's key")
        let heads = try s.receiptLog.heads(of: s.chain(), from: 0, limit: 10, withLeaves: false)
        try expectEqual(heads.last?.signed, receipt.head, "the head is stored")
        try expectEqual(try s.report("e1", at: 1_500), .recorded(.onTime), "the evaluation stored before is untouched")
    }
]
