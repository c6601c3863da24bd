"""The closed vocabularies of insightd's API (openapi/openapi.json), as `str` enumerations.

Values stay open on the way in: an answer carrying a value this client version does not know
decodes to the plain string instead of failing, so a value added by a later insightd still
travels (treat an unknown `DecisionAction` as `BLOCK`, an unknown `InsightValue` as an error).
Members compare equal to their wire strings (`InsightValue.HIGH == "high"`).
`ENUMERATIONS` names each one as clients/conformance/check_openapi.py does, which fails the
build when they differ from the document.
"""
from enum import Enum


class OperationCategory(str, Enum):
    PAYMENT = "payment"
    ACCOUNT = "account"
    RESOURCE_USE = "resourceUse"
    COMMUNICATION = "communication"
    OTHER = "other"


class EventType(str, Enum):
    SESSION_START = "sessionStart"
    FIELD_FOCUS = "fieldFocus"
    FIELD_BLUR = "fieldBlur"
    KEY_DOWN = "keyDown"
    DELETE = "delete"
    PASTE = "paste"
    TAP = "tap"
    SCROLL = "scroll"
    APP_BACKGROUND = "appBackground"
    APP_FOREGROUND = "appForeground"
    CALL_START = "callStart"
    CALL_END = "callEnd"
    SCREEN_SHARE_START = "screenShareStart"
    SCREEN_SHARE_END = "screenShareEnd"
    ORIENTATION_CHANGE = "orientationChange"
    PROXIMITY_NEAR = "proximityNear"
    PROXIMITY_FAR = "proximityFar"
    SUBMIT = "submit"


class EventField(str, Enum):
    PAYEE = "payee"
    AMOUNT = "amount"
    REFERENCE = "reference"
    OTP = "otp"
    PASSWORD = "password"
    OTHER = "other"


class Platform(str, Enum):
    """Where a capture kit runs (`InteractionSource.platform`): `WEB` for web pages and web views."""
    WEB = "web"
    IOS = "ios"
    ANDROID = "android"
    OTHER = "other"


class AmountBand(str, Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class InitiatorKind(str, Enum):
    PERSON = "person"
    AGENT = "agent"


class UntrustedContext(str, Enum):
    EMAIL = "email"
    MESSAGE = "message"
    WEB = "web"
    CALENDAR = "calendar"
    DOCUMENT = "document"
    PUBLIC_FEED = "publicFeed"
    TOOL_OUTPUT = "toolOutput"


class SideEffect(str, Enum):
    FINANCIAL = "financial"
    EXTERNAL_COMMUNICATION = "externalCommunication"
    DESTRUCTIVE = "destructive"
    PERSISTENT_STORAGE = "persistentStorage"
    SENSITIVE_DATA_ACCESS = "sensitiveDataAccess"
    DEVICE_CONTROL = "deviceControl"


class Environment(str, Enum):
    PRODUCTION = "production"
    SANDBOX = "sandbox"


class InsightType(str, Enum):
    IS_LIKELY_BEING_COACHED = "isLikelyBeingCoached"


class InsightValue(str, Enum):
    """`UNKNOWN` means no evidence, never "low risk"."""
    UNKNOWN = "unknown"
    MEDIUM = "medium"
    HIGH = "high"


class InsightErrorCode(str, Enum):
    INSIGHT_EVALUATION_FAILED = "insightEvaluationFailed"
    INSIGHT_UNAVAILABLE = "insightUnavailable"
    INSIGHT_VERSION_INCOMPATIBLE = "insightVersionIncompatible"
    INSIGHT_VERSION_UNAVAILABLE = "insightVersionUnavailable"
    RATE_LIMIT_ERROR = "rateLimitError"


class DecisionAction(str, Enum):
    """Precedence: `PROCEED` < `CONFIRM` < `CONFIRM_OUT_OF_BAND` < `BLOCK`."""
    PROCEED = "proceed"
    CONFIRM = "confirm"
    CONFIRM_OUT_OF_BAND = "confirmOutOfBand"
    BLOCK = "block"


class ConsumptionStatus(str, Enum):
    USED_REDUCED_FRICTION = "usedReducedFriction"
    USED_UNCHANGED_FRICTION = "usedUnchangedFriction"
    USED_INCREASED_FRICTION = "usedIncreasedFriction"
    NOT_USED_NOT_NEEDED = "notUsedNotNeeded"
    NOT_USED_ERROR = "notUsedError"
    USED_EVALUATION_ONLY = "usedEvaluationOnly"


class LabelOutcome(str, Enum):
    CONFIRMED_FRAUD = "confirmedFraud"
    CONFIRMED_LEGITIMATE = "confirmedLegitimate"


class FraudType(str, Enum):
    TECH_SUPPORT_SCAM = "techSupportScam"
    AUTHORITY_IMPERSONATION = "authorityImpersonation"
    FAMILY_EMERGENCY = "familyEmergency"
    ROMANCE_SCAM = "romanceScam"
    INVESTMENT_SCAM = "investmentScam"
    PURCHASE_SCAM = "purchaseScam"
    ACCOUNT_TAKEOVER = "accountTakeover"
    OTHER = "other"


class LabelResultStatus(str, Enum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    UNKNOWN_INSIGHT = "unknownInsight"
    INVALID = "invalid"


class ModelStatus(str, Enum):
    ACTIVE = "active"
    WITHDRAWN = "withdrawn"


class ProblemCode(str, Enum):
    """Every `code` of a problem answer; each has its error class in `errors`."""
    CONTEXT_INVALID = "contextInvalid"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    DENIED = "denied"
    OVERRIDE_NOT_ALLOWED = "overrideNotAllowed"
    NOT_FOUND = "notFound"
    EVALUATION_NOT_FOUND = "evaluationNotFound"
    CALLER_NOT_FOUND = "callerNotFound"
    KEY_NOT_FOUND = "keyNotFound"
    METHOD_NOT_ALLOWED = "methodNotAllowed"
    CONSUMPTION_CONFLICT = "consumptionConflict"
    IDEMPOTENCY_KEY_REUSED = "idempotencyKeyReused"
    UNSUPPORTED_MEDIA_TYPE = "unsupportedMediaType"
    PAYLOAD_TOO_LARGE = "payloadTooLarge"
    HEADERS_TOO_LARGE = "headersTooLarge"
    MALFORMED_REQUEST = "malformedRequest"
    REQUEST_TIMEOUT = "requestTimeout"
    NOT_IMPLEMENTED = "notImplemented"
    HTTP_VERSION_NOT_SUPPORTED = "httpVersionNotSupported"
    RATE_LIMIT_EXCEEDED = "rateLimitExceeded"
    SERVER_ERROR = "serverError"


class ThrottleReason(str, Enum):
    """Why a `429` (`Problem.reason`); `DENIAL_CAPACITY` only on `PUT /v1/authorization`."""
    CALLER_RATE = "callerRate"
    REPORTING_PENALTY = "reportingPenalty"
    DEVICE_RATE = "deviceRate"
    DENIAL_CAPACITY = "denialCapacity"


class Role(str, Enum):
    EVALUATE = "evaluate"
    LABELS = "labels"
    ADMIN = "admin"


class AuthorizationChoice(str, Enum):
    """What a person chose (`PUT /v1/authorization`)."""
    DENIED = "denied"
    AUTHORIZED = "authorized"


class AuthorizationStatus(str, Enum):
    """Where a subject's choice stands: a denial waits its cooldown as `DENIAL_PENDING`."""
    AUTHORIZED = "authorized"
    DENIAL_PENDING = "denialPending"
    DENIED = "denied"


def _values(enum, leave_out=()):
    return [member.value for member in enum if member not in leave_out]


ENUMERATIONS = {
    "OperationCategory": _values(OperationCategory),
    "InteractionEvent.type": _values(EventType),
    "InteractionEvent.field": _values(EventField),
    "InteractionSource.platform": _values(Platform),
    "Transaction.amountBand": _values(AmountBand),
    "Initiator.kind": _values(InitiatorKind),
    "AgentFacts.untrustedContext": _values(UntrustedContext),
    "AgentFacts.sideEffects": _values(SideEffect),
    "Environment": _values(Environment),
    "InsightCatalogEntry.type": _values(InsightType),
    "InsightValue": _values(InsightValue),
    "InsightErrorCode": _values(InsightErrorCode),
    "DecisionAction": _values(DecisionAction),
    "TransparencyEntry.decision": _values(DecisionAction),
    "ConsumptionStatus": _values(ConsumptionStatus),
    "LabelOutcome": _values(LabelOutcome),
    "FraudType": _values(FraudType),
    "LabelResultStatus": _values(LabelResultStatus),
    "ModelVersion.status": _values(ModelStatus),
    "Problem.code": _values(ProblemCode),
    "Problem.reason": _values(ThrottleReason),
    "RateLimitState.throttled.lastReason": _values(ThrottleReason, (ThrottleReason.DENIAL_CAPACITY,)),
    "Caller.roles": _values(Role),
    "AuthorizationChange.status": _values(AuthorizationChoice),
    "AuthorizationState.status": _values(AuthorizationStatus),
}
"""Each enumeration of the document, by the name clients/conformance/check_openapi.py gives it."""
