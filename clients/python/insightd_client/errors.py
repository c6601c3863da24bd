"""The errors the client raises. Every problem `code` of the API has its class (a subclass of
`ProblemError`, found in `PROBLEM_ERRORS`); a code this client version does not know raises
`ProblemError` itself. Errors of the client's own: `ReceiptInvalidError` (an answer whose proof
does not verify: never trust it), `TransportError` (no answer: network, timeout),
`UnexpectedResponseError` (an answer that is not what the API promises), `BatchTooLargeError`,
`UnknownMemberError` (a request given as a dict with a member the API does not have).
"""
from .enums import ProblemCode


class InsightdError(Exception):
    """Every error this client raises."""


class ProblemError(InsightdError):
    """insightd answered with a problem (RFC 9457). `code` is stable: branch on it (or on the
    class), not on `detail`. `retry_after`: seconds to wait before trying again, when insightd
    said (`Retry-After`); `rate_limit`: the `RateLimit` header; `attempts`: the requests sent
    (more than 1 after retries); `problem`: the whole answer, typed (`models.Problem`)."""

    code = None

    def __init__(self, problem, retry_after=None, rate_limit=None):
        self.problem = problem
        self.status = problem.status
        self.code = problem.code
        self.detail = problem.detail
        self.field = problem.field
        self.reason = problem.reason
        self.retry_after = retry_after
        self.rate_limit = rate_limit
        self.attempts = 1
        super().__init__("%s %s: %s%s" % (problem.status, problem.code, problem.detail,
                                          " (%s)" % problem.field if problem.field else ""))


def _problem_class(code):
    name = code.value[:1].upper() + code.value[1:]
    name = {"ServerError": "ServerError", "NotImplemented": "NotImplementedProblemError"}.get(name, name + "Error")
    return type(name, (ProblemError,), {"code": code, "__doc__": "The problem `%s`." % code.value,
                                         "__module__": __name__})


_CLASSES = {code: _problem_class(code) for code in ProblemCode}
PROBLEM_ERRORS = {code.value: cls for code, cls in _CLASSES.items()}
"""The error class of each problem code, by the code's string."""

ContextInvalidError = _CLASSES[ProblemCode.CONTEXT_INVALID]
UnauthorizedError = _CLASSES[ProblemCode.UNAUTHORIZED]
ForbiddenError = _CLASSES[ProblemCode.FORBIDDEN]
DeniedError = _CLASSES[ProblemCode.DENIED]
OverrideNotAllowedError = _CLASSES[ProblemCode.OVERRIDE_NOT_ALLOWED]
NotFoundError = _CLASSES[ProblemCode.NOT_FOUND]
EvaluationNotFoundError = _CLASSES[ProblemCode.EVALUATION_NOT_FOUND]
CallerNotFoundError = _CLASSES[ProblemCode.CALLER_NOT_FOUND]
KeyNotFoundError = _CLASSES[ProblemCode.KEY_NOT_FOUND]
MethodNotAllowedError = _CLASSES[ProblemCode.METHOD_NOT_ALLOWED]
ConsumptionConflictError = _CLASSES[ProblemCode.CONSUMPTION_CONFLICT]
IdempotencyKeyReusedError = _CLASSES[ProblemCode.IDEMPOTENCY_KEY_REUSED]
UnsupportedMediaTypeError = _CLASSES[ProblemCode.UNSUPPORTED_MEDIA_TYPE]
PayloadTooLargeError = _CLASSES[ProblemCode.PAYLOAD_TOO_LARGE]
HeadersTooLargeError = _CLASSES[ProblemCode.HEADERS_TOO_LARGE]
MalformedRequestError = _CLASSES[ProblemCode.MALFORMED_REQUEST]
RequestTimeoutError = _CLASSES[ProblemCode.REQUEST_TIMEOUT]
NotImplementedProblemError = _CLASSES[ProblemCode.NOT_IMPLEMENTED]
HttpVersionNotSupportedError = _CLASSES[ProblemCode.HTTP_VERSION_NOT_SUPPORTED]
RateLimitExceededError = _CLASSES[ProblemCode.RATE_LIMIT_EXCEEDED]
ServerError = _CLASSES[ProblemCode.SERVER_ERROR]


class ReceiptInvalidError(InsightdError):
    """The answer's Insight-Receipt does not prove it: a changed body, a head not signed by a key
    of GET /v1/signing-keys, a path that does not lead to the head's root, another tenant's or
    environment's answer, a forked chain. Never retried; do not act on that answer."""


class TransportError(InsightdError):
    """No answer from insightd (connection refused or lost, timeout). `may_have_reached_server`
    is True when the request may have been processed: an evaluation may then exist."""

    def __init__(self, message, may_have_reached_server):
        super().__init__(message)
        self.may_have_reached_server = may_have_reached_server


class UnexpectedResponseError(InsightdError):
    """An answer that is not what the API promises (not JSON, a missing field, another
    `requestId` than the one sent, fewer insights than requested)."""


class BatchTooLargeError(InsightdError, ValueError):
    """More than 1,000 labels in one submission: refused before anything is sent."""


class UnknownMemberError(InsightdError, ValueError):
    """A request given as a dict has a member its schema lacks: `path` names it in the body
    (`interaction.interaction`: the kit's object wrapped once too often; `transaction.newCounterParty`:
    a misspelt name). Raised before sending: insightd would refuse it too (422), and a client
    that dropped it would send a request other than the one written."""

    def __init__(self, path, schema, members):
        super().__init__("unknown member %s: %s has %s" % (path, schema, ", ".join(members)))
        self.path = path
        self.schema = schema
        self.members = list(members)
