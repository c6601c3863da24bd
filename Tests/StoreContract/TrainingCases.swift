import Dispatch
import InsightDomain
import Synchronization

/// Training capture (docs/privacy.md "Training capture"): the caller's flag, the
/// vector stored with its evaluation and read back joined with its label, and its deletion by
/// retention (its own period, and with its evaluation) and by a subject's erasure.
extension StoreContract {
    static var trainingCases: [ContractCase] {
        [
            contractCase(.training, "the caller's flag is off by default, set and read back everywhere") { s in
                let (created, key) = try s.caller("c1")
                try expect(!created.trainingCapture, "off by default")
                let on = try s.registration.setTrainingCapture(callerId: "c1", true)
                try expect(on.trainingCapture)
                try expect(try s.registration.caller("c1", tenant: nil)?.trainingCapture == true, "registration")
                try expect(try s.credentials.credential(keyId: key.keyId)?.caller.trainingCapture == true, "credentials")
                try expect(try s.administration.caller("c1", tenant: Tenant.defaultName)?.trainingCapture == true, "administration")
                try expect(try s.registration.list(tenant: nil).first?.trainingCapture == true, "list")
                try expect(!(try s.registration.setTrainingCapture(callerId: "c1", false).trainingCapture), "off again")
                try expect(try s.credentials.credential(keyId: key.keyId)?.caller.trainingCapture == false)
                try expectThrows("an unknown caller") { try s.registration.setTrainingCapture(callerId: "nobody", true) }
                // The admin API's change, within the admin's tenant only, leaving the quota as it is.
                let changed = try value {
                    s.administration.updateCaller(
                        callerId: "c1", tenant: Tenant.defaultName, rate: nil, burst: nil,
                        trainingCapture: true, completion: $0)
                }
                try expectEqual(changed.map { [$0.trainingCapture ? 1 : 0, $0.rate, Double($0.burst)] }, [1, 10, 20])
                try expect(try s.credentials.credential(keyId: key.keyId)?.caller.trainingCapture == true)
                let elsewhere = try value {
                    s.administration.updateCaller(
                        callerId: "c1", tenant: "other", rate: nil, burst: nil, trainingCapture: false,
                        completion: $0)
                }
                try expect(elsewhere == nil, "another tenant's admin finds no such caller")
                let quota = try value {
                    s.administration.updateCaller(
                        callerId: "c1", tenant: Tenant.defaultName, rate: 5, burst: nil,
                        trainingCapture: nil, completion: $0)
                }
                try expectEqual(quota.map { [$0.trainingCapture ? 1 : 0, $0.rate] }, [1, 5], "a quota change keeps the flag")
            },
            contractCase(.training, "a vector is stored with its evaluation and read back with its label") { s in
                try s.caller("c1")
                let features = trainingFeatures(1)
                try s.record("e1", insights: ["e1-i0"], created: 1_000, vector: vector("e1-i0", features))
                try s.record("e2", insights: ["e2-i0"], created: 1_100)
                try s.record("e3", insights: ["e3-i0"], created: 1_200, category: .account, vector: vector("e3-i0", trainingFeatures(3)))
                try expectEqual(
                    try s.label([fraud("e1-i0"), fraud("e2-i0", .confirmedLegitimate)]),
                    .processed([.accepted, .accepted], replayed: false))
                let read = try exported(s, from: 0, until: 10_000)
                try expectEqual(
                    read,
                    [
                        CapturedVector(
                            features: features, category: "payment", modelVersion: "2.0", createdAt: 1_000, label: .confirmedFraud),
                        CapturedVector(
                            features: trainingFeatures(3), category: "account", modelVersion: "2.0", createdAt: 1_200, label: nil)
                    ], "only evaluations with a vector; NaN kept as missing")
                try expect(read[0].features[1].isNaN && read[0].features[0] == features[0], "values as stored, bit for bit")
            },
            contractCase(.training, "the export selects the period, the environment and the tenant") { s in
                try s.caller("c1")
                try s.caller("b1", tenant: "b")
                try s.caller("s1", environment: .sandbox)
                try s.record("e1", created: 1_000, vector: vector("e1-i0", trainingFeatures(1)))
                try s.record("e2", created: 2_000, vector: vector("e2-i0", trainingFeatures(2)))
                try s.record("e3", created: 3_000, vector: vector("e3-i0", trainingFeatures(3)))
                try s.record("e4", caller: "b1", created: 2_000, vector: vector("e4-i0", trainingFeatures(4), tenant: "b"))
                try s.record("e5", caller: "s1", environment: .sandbox, created: 2_000, vector: vector("e5-i0", trainingFeatures(5)))
                try expectEqual(try exported(s, from: 2_000, until: 3_000).map(\.features[0]), [2, 4], "from inclusive, until exclusive")
                try expectEqual(try exported(s, from: 0, until: 10_000, tenant: Tenant.defaultName).map(\.features[0]), [1, 2, 3])
                try expectEqual(try exported(s, from: 0, until: 10_000, tenant: "b").map(\.features[0]), [4])
                try expectEqual(try exported(s, from: 0, until: 10_000, environment: .sandbox).map(\.features[0]), [5])
            },
            contractCase(.training, "the export reads every vector, past one read batch, in creation order") { s in
                try s.caller("c1")
                let count = 1_105
                let done = DispatchGroup()
                let failures = Mutex(0)
                for i in 0..<count {
                    done.enter()
                    // Created in reverse order of storing, several per millisecond.
                    let e = EvaluationRecord(
                        eventId: "e\(i)", callerId: "c1", environment: .production, category: .payment,
                        createdAt: Milliseconds(10_000 - i / 3), reportConsumptionBy: 20_000, subject: HashedSubject(),
                        insights: [], trainingVector: vector("e\(i)-i0", trainingFeatures(Double(i))))
                    s.ledger.record(e, answer: Array(e.eventId.utf8)) { result in
                        if case .failure = result { failures.withLock { $0 += 1 } }
                        done.leave()
                    }
                }
                try expect(done.wait(timeout: .now() + 60) == .success, "stored within 60 s")
                try expectEqual(failures.withLock { $0 }, 0)
                let read = try exported(s, from: 0, until: 20_000)
                try expectEqual(read.count, count)
                try expectEqual(Set(read.map(\.features[0])).count, count, "each once")
                try expect(zip(read, read.dropFirst()).allSatisfy { $0.createdAt <= $1.createdAt }, "oldest first")
            },
            contractCase(.training, "retention deletes vectors past their own period, and with their evaluation") { s in
                try s.caller("c1")
                try s.record("e1", created: 1_000, vector: vector("e1-i0", trainingFeatures(1)))
                try s.record("e2", created: 5_000, vector: vector("e2-i0", trainingFeatures(2)))
                try s.record("e3", created: 900)
                var report = try value { s.retention.purgeBatch(olderThan: 500, trainingVectorsOlderThan: 2_000, completion: $0) }
                try expectEqual(report, RetentionReport(trainingVectors: 1), "the old vector only; its evaluation stays")
                try expectEqual(try exported(s, from: 0, until: 10_000).map(\.features[0]), [2])
                report = try s.purgeAll(olderThan: 6_000)
                try expectEqual(report.evaluations, 3)
                try expectEqual(report.trainingVectors, 1, "the vector goes with its evaluation")
                try expectEqual(try exported(s, from: 0, until: 10_000), [])
            },
            contractCase(.training, "a subject's erasure deletes the vectors of its evaluations") { s in
                try s.caller("c1")
                try s.caller("b1", tenant: "b")
                try s.record("e1", created: 1_000, account: [1, 2, 3], vector: vector("e1-i0", trainingFeatures(1)))
                try s.record("e2", created: 1_100, account: [7], vector: vector("e2-i0", trainingFeatures(2)))
                try s.record(
                    "e3", caller: "b1", created: 1_200, account: [1, 2, 3], vector: vector("e3-i0", trainingFeatures(3), tenant: "b"))
                try s.record("e4", created: 1_300, account: [1, 2, 3])
                let report = try s.erase(ErasedSubject(tenant: Tenant.defaultName, account: [[1, 2, 3]]))
                try expectEqual(report.evaluations, 2)
                try expectEqual(report.trainingVectors, 1, "e1's vector; e4 had none; tenant b's stays")
                try expectEqual(try exported(s, from: 0, until: 10_000).map(\.features[0]), [2, 3])
                try expectEqual(
                    try s.erase(ErasedSubject(tenant: Tenant.defaultName, account: [[1, 2, 3]])), SubjectErasureReport(),
                    "a second erasure finds nothing")
            }
        ]
    }
}

/// A feature vector whose first value is `first`, with a missing feature and a negative zero.
func trainingFeatures(_ first: Double) -> [Double] {
    [first, .nan, -0.0, 0.1] + (4..<28).map { Double($0) * 1.5 }
}

func vector(_ insightId: String, _ features: [Double], tenant: String = Tenant.defaultName) -> TrainingVector {
    TrainingVector(insightId: insightId, modelVersion: "2.0", tenant: tenant, features: features)
}

func exported(
    _ s: StoreSet, from: Milliseconds, until: Milliseconds, environment: Environment = .production,
    tenant: String? = nil
) throws -> [CapturedVector] {
    var read: [CapturedVector] = []
    try s.training.trainingVectors(TrainingExportQuery(from: from, until: until, environment: environment, tenant: tenant)) {
        read.append($0)
    }
    return read
}
