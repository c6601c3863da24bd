/** Requests and answers of insightd's API: every field of openapi/openapi.json, named as on the wire. */
import type {
  AmountBand, AuthorizationChoice, AuthorizationStatus, ConsumptionStatus, DecisionAction, Environment, EventField,
  EventType, FraudType, InitiatorKind, InsightErrorCode, InsightType, InsightValue, LabelOutcome, LabelResultStatus,
  ModelStatus, OperationCategory, Platform, Role, SideEffect, ThrottleReason, UntrustedContext,
} from "./enums.js";

// ---- POST /v1/evaluations: the request

/** One insight to answer; `modelVersion` pins a model (absent: the current one). */
export interface InsightRequest { type: InsightType; schemaVersion: number; modelVersion?: string }
/** The person's identifiers as you know them; hashed by insightd on arrival, never stored raw. */
export interface Subject { account?: string; device?: string; counterparty?: string }
/** One moment of the session: `t` ms since `sessionStart`; timing only, never what was typed. */
export interface InteractionEvent { t: number; type: EventType; field?: EventField }
export interface DeviceFacts { activeCall?: boolean; callStartedBeforeSession?: boolean; screenSharing?: boolean; remoteAccessApp?: boolean }
/** Which capture kit produced the interaction (kit, version: tokens); the platform selects the model's thresholds. */
export interface InteractionSource { kit: string; version: string; platform: Platform; droppedEvents?: number }
/** `events` (insightd extracts the features) or `summary` (docs/features.md), not both; `source`: the capture kit. */
export interface Interaction { events?: InteractionEvent[]; summary?: Record<string, number>; device?: DeviceFacts; source?: InteractionSource }
export interface Transaction { newCounterparty?: boolean; amountBand?: AmountBand }
/** What an AI agent in your app did to choose the operation (docs/decisions.md). */
export interface AgentFacts { userRequested?: boolean; untrustedContext?: UntrustedContext[]; argumentsFromUntrustedContext?: boolean; sideEffects?: SideEffect[] }
export interface Initiator { kind?: InitiatorKind; agent?: AgentFacts }
/** The body of POST /v1/evaluations; the client generates `requestId` when absent and checks the echo. */
export interface EvaluationRequest {
  operationCategory: OperationCategory;
  insights: InsightRequest[];
  requestId?: string;
  subject?: Subject;
  interaction?: Interaction;
  transaction?: Transaction;
  initiator?: Initiator;
}

// ---- POST /v1/evaluations: the answer

/** Exactly one of `value` and `error`: one failing insight never fails the others. */
export type InsightOutcome = { value: InsightValue; error?: undefined } | { value?: undefined; error: { code: InsightErrorCode; detail: string } };
export interface InsightResult {
  insightId: string;
  type: string;
  schemaVersion: number;
  modelVersion?: string;
  newestModelVersion?: string;
  isUsingCurrentModel?: boolean;
  outcome: InsightOutcome;
  reasons?: string[];
}
/** The decision policy's answer; treat an action this client does not know as "block". */
export interface Decision { action: DecisionAction; reasons: string[]; policyVersion: string }
export interface EvaluationResponse {
  eventId: string;
  requestId?: string;
  tenant: string;
  environment: Environment;
  serverTimestamp: string;
  reportConsumptionBy: string;
  insights: InsightResult[];
  decision: Decision;
}

// ---- Receipts

/** A signed tree head: the root of the Merkle tree of the answers one writer committed together. */
export interface ReceiptHeadPayload {
  instance: string;
  /** With `environment`, the chain's tenant: the answers'; absent in a head made before heads were kept per tenant. */
  tenant?: string;
  environment?: string;
  sequence: number; size: number; root: string; previous: string | null; /** Unix ms */ time: number;
}
export interface ReceiptHead extends ReceiptHeadPayload { head: string }
export interface ReceiptHeadList { heads: ReceiptHead[]; next?: string }
export interface SigningKey { kty: string; crv: string; x: string; kid: string; use: string; alg: string }
export interface JSONWebKeySet { keys: SigningKey[] }

// ---- Consumption, labels, authorization, transparency, erasure

export interface ConsumptionReport { status: ConsumptionStatus; insightIdsUsed?: string[] }
/** `fraudType` only with confirmedFraud ("other" if unknown); `discoveredAt` YYYY-MM-DD. */
export interface Label { insightId: string; outcome: LabelOutcome; fraudType?: FraudType; discoveredAt: string }
export interface LabelResult { index: number; status: LabelResultStatus; insightId?: string; field?: string; detail?: string }
export interface LabelSummary { accepted: number; duplicate: number; conflict: number; unknownInsight: number; invalid: number }
export interface LabelSubmissionResult {
  results: LabelResult[];
  summary: LabelSummary;
  /** insightd answered from the first submission with this Idempotency-Key. */
  replayed: boolean;
  idempotencyKey: string;
}
/** Exactly one of `account` and `device`. */
export interface AuthorizationSubject { account?: string; device?: string }
export interface AuthorizationChange { subject: AuthorizationSubject; status: AuthorizationChoice }
export interface AuthorizationQuery { subject: AuthorizationSubject }
export interface AuthorizationState { status: AuthorizationStatus; requestedAt: string | null; effectiveAt: string | null }
export interface SubjectIdentifiers { account?: string; device?: string; counterparty?: string }
export interface TransparencyQuery { subject: SubjectIdentifiers; limit?: number; cursor?: string; tenant?: string }
export interface TransparencyInsight { type: string; modelVersion: string | null; value?: InsightValue; error?: InsightErrorCode }
export interface TransparencyEntry {
  eventId: string; createdAt: string; category: OperationCategory; callerName: string | null;
  insights: TransparencyInsight[]; decision: DecisionAction | null;
}
export interface Transparency { evaluations: TransparencyEntry[]; cursor?: string; authorization: AuthorizationState | null }
export interface ErasureRequest { subject: SubjectIdentifiers; tenant?: string }
export interface ErasureResult { tenant: string; evaluations: number; authorizations: number; trainingVectors: number; hashKeys: number }

// ---- The catalog

export interface ModelVersion { version: string; status: ModelStatus; current: boolean }
export interface InsightCatalogEntry { type: InsightType; schemaVersions: number[]; values: InsightValue[]; newestModelVersion?: string; modelVersions: ModelVersion[] }
export interface InsightCatalog { insights: InsightCatalogEntry[] }

// ---- Admin: callers, keys, rate limits

export interface Caller {
  callerId: string; name: string; tenant: string; environment: Environment; roles: Role[];
  rate: number; burst: number; createdAt: string; trainingCapture: boolean;
}
export interface CallerList { callers: Caller[] }
export interface CallerQuotaPatch { rate?: number; burst?: number; trainingCapture?: boolean }
export interface APIKeyInfo { keyId: string; createdAt: string; revokedAt: string | null }
export interface APIKeyList { keys: APIKeyInfo[] }
export interface RateLimitState {
  callerId: string;
  environment: Environment;
  policy: { rate: number; burst: number; overdueAllowanceShare: number; overdueAllowanceMinimum: number; floorShare: number; recoverySeconds: number };
  penalty: { step: number; maxStep: number; factor: number; why: string };
  effectiveRate: number;
  effectiveBurst: number;
  tokens: number;
  window: { seconds: number; evaluations: number; onTime: number; late: number; overdue: number; pending: number; overdueAllowance: number; countedAt: string | null };
  throttled: { count: number; lastThrottledAt: string | null; lastReason: ThrottleReason | null };
}
export interface RateLimitList { callers: { caller: Caller; rateLimit: RateLimitState }[] }

/** An RFC 9457 problem answer, as ProblemError carries it. */
export interface Problem {
  type: string; title: string; status: number; code: string; detail: string; field?: string;
  reason?: ThrottleReason; retryAfterSeconds?: number; configuredRate?: number; effectiveRate?: number;
  penaltyStep?: number; overdueReports?: number; overdueAllowance?: number; evaluationsInWindow?: number;
}
