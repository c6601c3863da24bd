/// The closed vocabularies of the API (openapi/openapi.json). Raw values are the wire names.

/// Where a caller's data lives. Environments never see each other's data.
public enum Environment: String, Sendable, CaseIterable, Codable {
    case production, sandbox
}

/// What a credential may do.
public enum Role: String, Sendable, CaseIterable, Codable, Comparable {
    case evaluate, labels, admin

    public static func < (lhs: Role, rhs: Role) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// The kind of operation being evaluated; it selects model thresholds.
public enum OperationCategory: String, Sendable, CaseIterable {
    case payment, account, resourceUse, communication, other
}

/// The insight types this server knows.
public enum InsightType: String, Sendable, CaseIterable {
    case isLikelyBeingCoached
}

/// Values of schema version 1. There is deliberately no `low`: `unknown` means no evidence.
public enum InsightValue: String, Sendable, CaseIterable {
    case unknown, medium, high
}

/// Why one insight of an evaluation has no value. One failing insight never fails the others.
public enum InsightErrorCode: String, Sendable, CaseIterable {
    case insightEvaluationFailed, insightUnavailable, insightVersionIncompatible,
        insightVersionUnavailable, rateLimitError
}

/// How the caller used an evaluation (docs/api.md, consumption reports).
public enum ConsumptionStatus: String, Sendable, CaseIterable {
    case usedReducedFriction, usedUnchangedFriction, usedIncreasedFriction,
        notUsedNotNeeded, notUsedError, usedEvaluationOnly
}

/// Whether a consumption report arrived by its `reportConsumptionBy`.
public enum Timeliness: String, Sendable, CaseIterable {
    case onTime, late
}

/// The verdict of an offline investigation.
public enum LabelOutcome: String, Sendable, CaseIterable {
    case confirmedFraud, confirmedLegitimate
}

/// The kind of fraud a confirmed-fraud label names.
public enum FraudType: String, Sendable, CaseIterable {
    case techSupportScam, authorityImpersonation, familyEmergency, romanceScam,
        investmentScam, purchaseScam, accountTakeover, other
}

/// The per-item result of a label submission.
public enum LabelResultStatus: String, Sendable, CaseIterable {
    case accepted, duplicate, conflict, unknownInsight, invalid
}

/// The kinds of subject identifier; each is hashed under its own domain.
public enum IdentifierKind: String, Sendable, CaseIterable {
    case account, device, counterparty
}
