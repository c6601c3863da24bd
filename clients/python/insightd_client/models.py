"""Typed requests and answers of insightd's API: every field of openapi/openapi.json, in
snake_case (the wire's camelCase is `wire.camel` of each name). Optional fields default to None
and are then left out of the request."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from .enums import (AmountBand, AuthorizationChoice, AuthorizationStatus, ConsumptionStatus,
                    DecisionAction, Environment, EventField, EventType, FraudType, InitiatorKind,
                    InsightErrorCode, InsightType, InsightValue, LabelOutcome, LabelResultStatus,
                    ModelStatus, OperationCategory, Platform, Role, SideEffect, ThrottleReason, UntrustedContext)

# ---- POST /v1/evaluations: the request


@dataclass
class InsightRequest:
    """One insight to answer: `type`, its value `schema_version`, and a `model_version` to pin
    (None: the current model)."""
    type: Union[InsightType, str]
    schema_version: int = 1
    model_version: Optional[str] = None

    @classmethod
    def is_likely_being_coached(cls, model_version=None):
        return cls(InsightType.IS_LIKELY_BEING_COACHED, 1, model_version)


@dataclass
class Subject:
    """The person's identifiers as you know them; hashed by insightd on arrival, never stored raw."""
    account: Optional[str] = None
    device: Optional[str] = None
    counterparty: Optional[str] = None


@dataclass
class InteractionEvent:
    """One moment of the session: `t` milliseconds since `sessionStart`; timing only, never what
    was typed."""
    t: int
    type: Union[EventType, str]
    field: Optional[Union[EventField, str]] = None


@dataclass
class DeviceFacts:
    active_call: Optional[bool] = None
    call_started_before_session: Optional[bool] = None
    screen_sharing: Optional[bool] = None
    remote_access_app: Optional[bool] = None


@dataclass
class InteractionSource:
    """Which capture kit produced the interaction (`kit`, `version`: tokens, never text); the
    platform selects the model's thresholds."""
    kit: str
    version: str
    platform: Union[Platform, str]
    dropped_events: Optional[int] = None


@dataclass
class Interaction:
    """`events` (insightd extracts the features) or `summary` (features computed on the device,
    named as docs/features.md says), not both; `device` alone is judged without timing;
    `source`: the capture kit that observed it."""
    events: Optional[List[InteractionEvent]] = None
    summary: Optional[Dict[str, float]] = None
    device: Optional[DeviceFacts] = None
    source: Optional[InteractionSource] = None


@dataclass
class Transaction:
    new_counterparty: Optional[bool] = None
    amount_band: Optional[Union[AmountBand, str]] = None


@dataclass
class AgentFacts:
    """What an AI agent in your app did to choose the operation (docs/decisions.md)."""
    user_requested: Optional[bool] = None
    untrusted_context: Optional[List[Union[UntrustedContext, str]]] = None
    arguments_from_untrusted_context: Optional[bool] = None
    side_effects: Optional[List[Union[SideEffect, str]]] = None


@dataclass
class Initiator:
    kind: Optional[Union[InitiatorKind, str]] = None
    agent: Optional[AgentFacts] = None


@dataclass
class EvaluationRequest:
    """The body of POST /v1/evaluations. `request_id` is yours (a transaction id); the client
    generates one when it is None and checks that the answer echoes it."""
    operation_category: Union[OperationCategory, str]
    insights: List[InsightRequest]
    request_id: Optional[str] = None
    subject: Optional[Subject] = None
    interaction: Optional[Interaction] = None
    transaction: Optional[Transaction] = None
    initiator: Optional[Initiator] = None

# ---- POST /v1/evaluations: the answer


@dataclass
class InsightFailure:
    """An insight-level error: one failing insight never fails the others."""
    code: Union[InsightErrorCode, str]
    detail: str


@dataclass
class InsightOutcome:
    """Exactly one of `value` and `error`."""
    value: Optional[Union[InsightValue, str]] = None
    error: Optional[InsightFailure] = None


@dataclass
class InsightResult:
    insight_id: str
    type: str
    schema_version: int
    outcome: InsightOutcome
    model_version: Optional[str] = None
    newest_model_version: Optional[str] = None
    is_using_current_model: Optional[bool] = None
    reasons: List[str] = field(default_factory=list)

    @property
    def value(self):
        """The value, or None when the insight failed (then see `error`)."""
        return self.outcome.value

    @property
    def error(self):
        return self.outcome.error


@dataclass
class Decision:
    """The decision policy's answer (docs/decisions.md); treat an action this client does not
    know (a plain string) as `DecisionAction.BLOCK`."""
    action: Union[DecisionAction, str]
    reasons: List[str]
    policy_version: str


@dataclass
class EvaluationResponse:
    event_id: str
    tenant: str
    environment: Union[Environment, str]
    server_timestamp: str
    report_consumption_by: str
    insights: List[InsightResult]
    decision: Decision
    request_id: Optional[str] = None

# ---- Receipts


@dataclass
class ReceiptHeadPayload:
    """A signed tree head: the root of the Merkle tree of the answers one writer committed together."""
    instance: str
    sequence: int
    size: int
    root: str
    previous: Optional[str]
    time: int
    """Unix milliseconds."""
    tenant: Optional[str] = None
    """The tenant whose answers the tree holds; None in a head made before heads were kept per tenant."""
    environment: Optional[str] = None
    """The environment of those answers; None with `tenant`."""


@dataclass
class ReceiptHead(ReceiptHeadPayload):
    """A head as GET /v1/receipts/heads lists it: its payload and `head`, the JWS itself."""
    head: str = ""


@dataclass
class ReceiptHeadList:
    heads: List[ReceiptHead]
    next: Optional[str] = None


@dataclass
class SigningKey:
    kty: str
    crv: str
    x: str
    kid: str
    use: str
    alg: str


@dataclass
class JSONWebKeySet:
    keys: List[SigningKey]

# ---- Consumption, labels, authorization, transparency, erasure


@dataclass
class ConsumptionReport:
    status: Union[ConsumptionStatus, str]
    insight_ids_used: Optional[List[str]] = None


@dataclass
class Label:
    """An offline verdict on one insight; `fraud_type` only with `CONFIRMED_FRAUD` (use
    `FraudType.OTHER` if unknown); `discovered_at` a date `YYYY-MM-DD`."""
    insight_id: str
    outcome: Union[LabelOutcome, str]
    discovered_at: str
    fraud_type: Optional[Union[FraudType, str]] = None


@dataclass
class LabelResult:
    index: int
    status: Union[LabelResultStatus, str]
    insight_id: Optional[str] = None
    field: Optional[str] = None
    detail: Optional[str] = None


@dataclass
class LabelSummary:
    accepted: int
    duplicate: int
    conflict: int
    unknown_insight: int
    invalid: int


@dataclass
class LabelSubmissionResult:
    """One result per label, in order; `replayed`: insightd answered from the first submission
    with the same Idempotency-Key (`Idempotent-Replayed: true`)."""
    results: List[LabelResult]
    summary: LabelSummary
    replayed: bool = False
    idempotency_key: Optional[str] = None


@dataclass
class AuthorizationSubject:
    """Exactly one of `account` and `device`."""
    account: Optional[str] = None
    device: Optional[str] = None


@dataclass
class AuthorizationChange:
    subject: AuthorizationSubject
    status: Union[AuthorizationChoice, str]


@dataclass
class AuthorizationQuery:
    subject: AuthorizationSubject


@dataclass
class AuthorizationState:
    status: Union[AuthorizationStatus, str]
    requested_at: Optional[str]
    effective_at: Optional[str]


@dataclass
class SubjectIdentifiers:
    account: Optional[str] = None
    device: Optional[str] = None
    counterparty: Optional[str] = None


@dataclass
class TransparencyQuery:
    subject: SubjectIdentifiers
    limit: Optional[int] = None
    cursor: Optional[str] = None
    tenant: Optional[str] = None


@dataclass
class TransparencyInsight:
    type: str
    model_version: Optional[str]
    value: Optional[Union[InsightValue, str]] = None
    error: Optional[Union[InsightErrorCode, str]] = None


@dataclass
class TransparencyEntry:
    event_id: str
    created_at: str
    category: Union[OperationCategory, str]
    caller_name: Optional[str]
    insights: List[TransparencyInsight]
    decision: Optional[Union[DecisionAction, str]]


@dataclass
class Transparency:
    evaluations: List[TransparencyEntry]
    authorization: Optional[AuthorizationState]
    cursor: Optional[str] = None


@dataclass
class ErasureRequest:
    subject: SubjectIdentifiers
    tenant: Optional[str] = None


@dataclass
class ErasureResult:
    tenant: str
    evaluations: int
    authorizations: int
    training_vectors: int
    hash_keys: int

# ---- The catalog


@dataclass
class ModelVersion:
    version: str
    status: Union[ModelStatus, str]
    current: bool


@dataclass
class InsightCatalogEntry:
    type: Union[InsightType, str]
    schema_versions: List[int]
    values: List[Union[InsightValue, str]]
    model_versions: List[ModelVersion]
    newest_model_version: Optional[str] = None


@dataclass
class InsightCatalog:
    insights: List[InsightCatalogEntry]

# ---- Admin: callers, keys, rate limits


@dataclass
class Caller:
    caller_id: str
    name: str
    tenant: str
    environment: Union[Environment, str]
    roles: List[Union[Role, str]]
    rate: float
    burst: int
    created_at: str
    training_capture: bool


@dataclass
class CallerList:
    callers: List[Caller]


@dataclass
class CallerQuotaPatch:
    rate: Optional[float] = None
    burst: Optional[int] = None
    training_capture: Optional[bool] = None


@dataclass
class APIKeyInfo:
    key_id: str
    created_at: str
    revoked_at: Optional[str]


@dataclass
class APIKeyList:
    keys: List[APIKeyInfo]


@dataclass
class RateLimitPolicy:
    rate: float
    burst: int
    overdue_allowance_share: float
    overdue_allowance_minimum: int
    floor_share: float
    recovery_seconds: int


@dataclass
class RateLimitPenalty:
    step: int
    max_step: int
    factor: float
    why: str


@dataclass
class ReportingWindow:
    seconds: int
    evaluations: int
    on_time: int
    late: int
    overdue: int
    pending: int
    overdue_allowance: int
    counted_at: Optional[str]


@dataclass
class ThrottleCount:
    count: int
    last_throttled_at: Optional[str]
    last_reason: Optional[Union[ThrottleReason, str]]


@dataclass
class RateLimitState:
    caller_id: str
    environment: Union[Environment, str]
    policy: RateLimitPolicy
    penalty: RateLimitPenalty
    effective_rate: float
    effective_burst: int
    tokens: int
    window: ReportingWindow
    throttled: ThrottleCount


@dataclass
class CallerRateLimit:
    caller: Caller
    rate_limit: RateLimitState


@dataclass
class RateLimitList:
    callers: List[CallerRateLimit]


@dataclass
class Problem:
    """An RFC 9457 problem answer, as the errors of `errors` carry it."""
    type: str
    title: str
    status: int
    code: str
    detail: str
    field: Optional[str] = None
    reason: Optional[Union[ThrottleReason, str]] = None
    retry_after_seconds: Optional[float] = None
    configured_rate: Optional[float] = None
    effective_rate: Optional[float] = None
    penalty_step: Optional[float] = None
    overdue_reports: Optional[float] = None
    overdue_allowance: Optional[float] = None
    evaluations_in_window: Optional[float] = None


JSON = Any
