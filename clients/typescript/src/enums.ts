/**
 * The closed vocabularies of insightd's API (openapi/openapi.json). Each is a frozen object of
 * its values and a type of the same name that also admits any other string: an answer carrying
 * a value this client version does not know still decodes (treat an unknown DecisionAction as
 * "block", an unknown InsightValue as an error). `ENUMERATIONS` names each as
 * clients/conformance/check_openapi.py does, which fails the build when they differ.
 */
type Open<T> = T | (string & {});

export const OperationCategory = { payment: "payment", account: "account", resourceUse: "resourceUse", communication: "communication", other: "other" } as const;
export type OperationCategory = Open<(typeof OperationCategory)[keyof typeof OperationCategory]>;

export const EventType = {
  sessionStart: "sessionStart", fieldFocus: "fieldFocus", fieldBlur: "fieldBlur", keyDown: "keyDown", delete: "delete",
  paste: "paste", tap: "tap", scroll: "scroll", appBackground: "appBackground", appForeground: "appForeground",
  callStart: "callStart", callEnd: "callEnd", screenShareStart: "screenShareStart", screenShareEnd: "screenShareEnd",
  orientationChange: "orientationChange", proximityNear: "proximityNear", proximityFar: "proximityFar", submit: "submit",
} as const;
export type EventType = Open<(typeof EventType)[keyof typeof EventType]>;

export const EventField = { payee: "payee", amount: "amount", reference: "reference", otp: "otp", password: "password", other: "other" } as const;
export type EventField = Open<(typeof EventField)[keyof typeof EventField]>;

/** Where a capture kit runs (InteractionSource.platform): `web` for web pages and web views. */
export const Platform = { web: "web", ios: "ios", android: "android", other: "other" } as const;
export type Platform = Open<(typeof Platform)[keyof typeof Platform]>;

export const AmountBand = { low: "low", medium: "medium", high: "high" } as const;
export type AmountBand = Open<(typeof AmountBand)[keyof typeof AmountBand]>;

export const InitiatorKind = { person: "person", agent: "agent" } as const;
export type InitiatorKind = Open<(typeof InitiatorKind)[keyof typeof InitiatorKind]>;

export const UntrustedContext = { email: "email", message: "message", web: "web", calendar: "calendar", document: "document", publicFeed: "publicFeed", toolOutput: "toolOutput" } as const;
export type UntrustedContext = Open<(typeof UntrustedContext)[keyof typeof UntrustedContext]>;

export const SideEffect = {
  financial: "financial", externalCommunication: "externalCommunication", destructive: "destructive",
  persistentStorage: "persistentStorage", sensitiveDataAccess: "sensitiveDataAccess", deviceControl: "deviceControl",
} as const;
export type SideEffect = Open<(typeof SideEffect)[keyof typeof SideEffect]>;

export const Environment = { production: "production", sandbox: "sandbox" } as const;
export type Environment = Open<(typeof Environment)[keyof typeof Environment]>;

export const InsightType = { isLikelyBeingCoached: "isLikelyBeingCoached" } as const;
export type InsightType = Open<(typeof InsightType)[keyof typeof InsightType]>;

/** `unknown` means no evidence, never "low risk". */
export const InsightValue = { unknown: "unknown", medium: "medium", high: "high" } as const;
export type InsightValue = Open<(typeof InsightValue)[keyof typeof InsightValue]>;

export const InsightErrorCode = {
  insightEvaluationFailed: "insightEvaluationFailed", insightUnavailable: "insightUnavailable",
  insightVersionIncompatible: "insightVersionIncompatible", insightVersionUnavailable: "insightVersionUnavailable",
  rateLimitError: "rateLimitError",
} as const;
export type InsightErrorCode = Open<(typeof InsightErrorCode)[keyof typeof InsightErrorCode]>;

/** Precedence: proceed < confirm < confirmOutOfBand < block. */
export const DecisionAction = { proceed: "proceed", confirm: "confirm", confirmOutOfBand: "confirmOutOfBand", block: "block" } as const;
export type DecisionAction = Open<(typeof DecisionAction)[keyof typeof DecisionAction]>;

export const ConsumptionStatus = {
  usedReducedFriction: "usedReducedFriction", usedUnchangedFriction: "usedUnchangedFriction",
  usedIncreasedFriction: "usedIncreasedFriction", notUsedNotNeeded: "notUsedNotNeeded", notUsedError: "notUsedError",
  usedEvaluationOnly: "usedEvaluationOnly",
} as const;
export type ConsumptionStatus = Open<(typeof ConsumptionStatus)[keyof typeof ConsumptionStatus]>;

export const LabelOutcome = { confirmedFraud: "confirmedFraud", confirmedLegitimate: "confirmedLegitimate" } as const;
export type LabelOutcome = Open<(typeof LabelOutcome)[keyof typeof LabelOutcome]>;

export const FraudType = {
  techSupportScam: "techSupportScam", authorityImpersonation: "authorityImpersonation", familyEmergency: "familyEmergency",
  romanceScam: "romanceScam", investmentScam: "investmentScam", purchaseScam: "purchaseScam",
  accountTakeover: "accountTakeover", other: "other",
} as const;
export type FraudType = Open<(typeof FraudType)[keyof typeof FraudType]>;

export const LabelResultStatus = { accepted: "accepted", duplicate: "duplicate", conflict: "conflict", unknownInsight: "unknownInsight", invalid: "invalid" } as const;
export type LabelResultStatus = Open<(typeof LabelResultStatus)[keyof typeof LabelResultStatus]>;

export const ModelStatus = { active: "active", withdrawn: "withdrawn" } as const;
export type ModelStatus = Open<(typeof ModelStatus)[keyof typeof ModelStatus]>;

/** Every `code` of a problem answer; each has its error class (errors.ts). */
export const ProblemCode = {
  contextInvalid: "contextInvalid", unauthorized: "unauthorized", forbidden: "forbidden", denied: "denied",
  overrideNotAllowed: "overrideNotAllowed", notFound: "notFound", evaluationNotFound: "evaluationNotFound",
  callerNotFound: "callerNotFound", keyNotFound: "keyNotFound", methodNotAllowed: "methodNotAllowed",
  consumptionConflict: "consumptionConflict", idempotencyKeyReused: "idempotencyKeyReused",
  unsupportedMediaType: "unsupportedMediaType", payloadTooLarge: "payloadTooLarge", headersTooLarge: "headersTooLarge",
  malformedRequest: "malformedRequest", requestTimeout: "requestTimeout", notImplemented: "notImplemented",
  httpVersionNotSupported: "httpVersionNotSupported", rateLimitExceeded: "rateLimitExceeded", serverError: "serverError",
} as const;
export type ProblemCode = Open<(typeof ProblemCode)[keyof typeof ProblemCode]>;

/** Why a 429 (`Problem.reason`); `denialCapacity` only on PUT /v1/authorization. */
export const ThrottleReason = { callerRate: "callerRate", reportingPenalty: "reportingPenalty", deviceRate: "deviceRate", denialCapacity: "denialCapacity" } as const;
export type ThrottleReason = Open<(typeof ThrottleReason)[keyof typeof ThrottleReason]>;

export const Role = { evaluate: "evaluate", labels: "labels", admin: "admin" } as const;
export type Role = Open<(typeof Role)[keyof typeof Role]>;

/** What a person chose (PUT /v1/authorization). */
export const AuthorizationChoice = { denied: "denied", authorized: "authorized" } as const;
export type AuthorizationChoice = Open<(typeof AuthorizationChoice)[keyof typeof AuthorizationChoice]>;

/** Where a subject's choice stands: a denial waits its cooldown as `denialPending`. */
export const AuthorizationStatus = { authorized: "authorized", denialPending: "denialPending", denied: "denied" } as const;
export type AuthorizationStatus = Open<(typeof AuthorizationStatus)[keyof typeof AuthorizationStatus]>;

const values = (e: Record<string, string>, leaveOut: string[] = []) => Object.values(e).filter((v) => !leaveOut.includes(v));

/** Each enumeration of the document, by the name clients/conformance/check_openapi.py gives it. */
export const ENUMERATIONS: Record<string, string[]> = {
  "OperationCategory": values(OperationCategory),
  "InteractionEvent.type": values(EventType),
  "InteractionEvent.field": values(EventField),
  "InteractionSource.platform": values(Platform),
  "Transaction.amountBand": values(AmountBand),
  "Initiator.kind": values(InitiatorKind),
  "AgentFacts.untrustedContext": values(UntrustedContext),
  "AgentFacts.sideEffects": values(SideEffect),
  "Environment": values(Environment),
  "InsightCatalogEntry.type": values(InsightType),
  "InsightValue": values(InsightValue),
  "InsightErrorCode": values(InsightErrorCode),
  "DecisionAction": values(DecisionAction),
  "TransparencyEntry.decision": values(DecisionAction),
  "ConsumptionStatus": values(ConsumptionStatus),
  "LabelOutcome": values(LabelOutcome),
  "FraudType": values(FraudType),
  "LabelResultStatus": values(LabelResultStatus),
  "ModelVersion.status": values(ModelStatus),
  "Problem.code": values(ProblemCode),
  "Problem.reason": values(ThrottleReason),
  "RateLimitState.throttled.lastReason": values(ThrottleReason, [ThrottleReason.denialCapacity]),
  "Caller.roles": values(Role),
  "AuthorizationChange.status": values(AuthorizationChoice),
  "AuthorizationState.status": values(AuthorizationStatus),
};
