"""`Client`: insightd's API over HTTP(S) with the standard library (`http.client`)."""
import dataclasses
import http.client
import json
import secrets
import socket
import ssl
import string
import time
import urllib.parse
import uuid
from dataclasses import dataclass, replace
from enum import Enum
from typing import Optional

from . import __version__
from .enums import AuthorizationChoice
from .errors import (PROBLEM_ERRORS, BatchTooLargeError, ProblemError, ReceiptInvalidError,
                     TransportError, UnexpectedResponseError)
from .models import (APIKeyList, AuthorizationChange, AuthorizationQuery, AuthorizationState,
                     AuthorizationSubject, Caller, CallerList, CallerQuotaPatch, ConsumptionReport,
                     ErasureRequest, ErasureResult, EvaluationRequest, EvaluationResponse,
                     InsightCatalog, JSONWebKeySet, Label, LabelSubmissionResult, Problem,
                     RateLimitList, RateLimitState, ReceiptHeadList, SubjectIdentifiers,
                     Transparency, TransparencyQuery, APIKeyInfo)
from .receipts import KeyPins, Receipt, ReceiptVerifier
from .wire import decode, decode_request, encode

MAX_LABELS = 1000
"""The most labels one POST /v1/labels takes."""

# Each operation of openapi/ this client calls: (method, path, retry). `retry` says when a failed
# attempt is tried again: "safe" — after a network failure or a 503, since repeating the request
# changes nothing (reads, PUT, a consumption report or a key revocation done twice, labels under
# the same Idempotency-Key); "unsent" — only when the request cannot have reached insightd (the
# connection was never made), because a second POST /v1/evaluations would be a second
# evaluation the caller did not ask for.
OPERATIONS = {
    "createEvaluation": ("POST", "/v1/evaluations", "unsent"),
    "reportConsumption": ("POST", "/v1/evaluations/{eventId}/consumption", "safe"),
    "submitLabels": ("POST", "/v1/labels", "safe"),
    "listInsights": ("GET", "/v1/insights", "safe"),
    "getSigningKeys": ("GET", "/v1/signing-keys", "safe"),
    "listReceiptHeads": ("GET", "/v1/receipts/heads", "safe"),
    "setAuthorization": ("PUT", "/v1/authorization", "safe"),
    "queryAuthorization": ("POST", "/v1/authorization/query", "safe"),
    "subjectTransparency": ("POST", "/v1/subjects/transparency", "safe"),
    "subjectErasure": ("POST", "/v1/subjects/erasure", "safe"),
    "listCallers": ("GET", "/admin/v1/callers", "safe"),
    "getCaller": ("GET", "/admin/v1/callers/{callerId}", "safe"),
    "updateCallerQuota": ("PATCH", "/admin/v1/callers/{callerId}", "safe"),
    "getCallerRateLimit": ("GET", "/admin/v1/callers/{callerId}/rate-limit", "safe"),
    "resetCallerRateLimit": ("POST", "/admin/v1/callers/{callerId}/rate-limit/reset", "safe"),
    "listRateLimits": ("GET", "/admin/v1/rate-limits", "safe"),
    "listCallerKeys": ("GET", "/admin/v1/callers/{callerId}/keys", "safe"),
    "revokeCallerKey": ("POST", "/admin/v1/callers/{callerId}/keys/{keyId}/revoke", "safe"),
}


@dataclass
class Evaluation(EvaluationResponse):
    """An evaluation's answer (every field of the typed body), with `receipt` (its verified
    proof, None when verification is off), `body` (the exact bytes the receipt covers),
    `attempts`, and `replayed` (insightd answered a retry from the first evaluation:
    `Idempotent-Replayed`)."""
    receipt: Optional[Receipt] = None
    body: bytes = b""
    attempts: int = 1
    replayed: bool = False

    @property
    def verified(self):
        return self.receipt is not None


class _Answer:
    def __init__(self, status, headers, body, attempts):
        self.status, self.headers, self.body, self.attempts = status, headers, body, attempts


class Client:
    """One insightd base URL and API key; thread-safe, create one and share it.

    - `timeout`: seconds for connecting and for each read of an answer.
    - `max_retries`: further attempts after a network failure or a 503, with the same
      Idempotency-Key, for the operations where a repeat is safe (never a second evaluation);
      the wait doubles from `backoff` seconds, or is insightd's Retry-After up to `max_wait`.
    - `verify_receipts` (on by default): every evaluation's Insight-Receipt is verified against
      GET /v1/signing-keys before the answer is decoded; a failure raises ReceiptInvalidError.
    - `pinned_keys` (a JWKS document: JSON text, a dict or a JSONWebKeySet) and
      `pinned_thumbprints` (the keys' RFC 7638 thumbprints, their `kid`s): the keys you trust to
      sign receipts. Without pins the client trusts whatever key set the base URL serves, so a
      receipt proves the answer only as far as TLS to insightd does; with them, a head signed by
      any other key raises ReceiptInvalidError ("… is not pinned"), even if the base URL's key
      set lists it. Pin the next key before a rotation (docs/operations.md, "Signing keys").
      `allow_unpinned_keys`: accept other fetched keys too (rolling pins out; `receipt.kid`
      says which key signed).
    - `expected_tenant`, `expected_environment`: the tenant and environment the answers must
      name (the receipt binds them); by default those of the first verified answer.
    - `idempotent_evaluations` (on by default): insightd replays an evaluation sent again with the
      same `requestId` (docs/api.md, "Retries: requestId"), so an evaluation whose `request_id`
      you set is retried like a read, the same bytes. Never one whose `request_id` the client
      generated: you could not find it again. False for an insightd older than that.
    """

    def __init__(self, base_url, api_key, *, timeout=10.0, max_retries=2, backoff=0.2, max_wait=5.0,
                 verify_receipts=True, expected_tenant=None, expected_environment=None, ssl_context=None,
                 idempotent_evaluations=True, pinned_keys=None, pinned_thumbprints=None, allow_unpinned_keys=False):
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("base_url must be an http or https URL")
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._prefix = parts.path.rstrip("/")
        self._api_key = api_key
        self.timeout, self.max_retries, self.backoff, self.max_wait = timeout, max_retries, backoff, max_wait
        self.verify_receipts = verify_receipts
        self._expected_tenant, self._expected_environment = expected_tenant, expected_environment
        self._ssl_context = ssl_context
        self.idempotent_evaluations = idempotent_evaluations
        pins = None
        if pinned_keys is not None or pinned_thumbprints is not None:
            pins = KeyPins(pinned_keys, pinned_thumbprints or (), allow_unpinned_keys)
        self._verifier = ReceiptVerifier(self._fetch_signing_keys, pins)

    # ---- evaluations

    def evaluate(self, request, *, override=None):
        """POST /v1/evaluations: an `Evaluation` whose receipt verified (unless verification is
        off). `override`: the sandbox's Insight-Override, e.g. "isLikelyBeingCoached=high"
        (a production key gets OverrideNotAllowedError). Raises the problem's error class, or
        ReceiptInvalidError, UnexpectedResponseError, TransportError; a `request` given as a dict
        with a member the API lacks raises UnknownMemberError naming its path, before sending
        (`interaction.interaction`: the kit's object wrapped once too often). Retried like a read
        when you set `request_id` (insightd replays the first evaluation); otherwise not once
        the request may have reached insightd: a TransportError with `may_have_reached_server`
        then leaves it unknown whether an evaluation exists."""
        if isinstance(request, dict):
            request = decode_request(EvaluationRequest, request)
        retry = "safe" if self.idempotent_evaluations and request.request_id is not None else None
        if request.request_id is None:
            request = replace(request, request_id="req-" + "".join(secrets.choice(string.ascii_letters) for _ in range(24)))
        headers = {"Insight-Override": override} if override is not None else {}
        answer = self._call("createEvaluation", body=encode(request), headers=headers, retry=retry)
        receipt = None
        if self.verify_receipts:
            receipt = self._verifier.verify(answer.body, answer.headers.get("insight-receipt"))
        response = self._decode(EvaluationResponse, answer)
        if response.request_id != request.request_id:
            raise UnexpectedResponseError("the answer's requestId is not the one sent")
        if len(response.insights) != len(request.insights):
            raise UnexpectedResponseError("the answer does not answer each requested insight")
        if receipt is not None:
            self._check_scope(response)
        fields = {f.name: getattr(response, f.name) for f in dataclasses.fields(EvaluationResponse)}
        return Evaluation(**fields, receipt=receipt, body=answer.body, attempts=answer.attempts,
                          replayed=answer.headers.get("idempotent-replayed") == "true")

    def _check_scope(self, response):
        if self._expected_tenant is None:
            self._expected_tenant = response.tenant
        if self._expected_environment is None:
            self._expected_environment = response.environment
        if response.tenant != self._expected_tenant or response.environment != self._expected_environment:
            raise ReceiptInvalidError("the answer is %s/%s's, not %s/%s's" % (
                response.tenant, response.environment, self._expected_tenant, self._expected_environment))

    def report_consumption(self, event_id, status, insight_ids_used=None):
        """POST /v1/evaluations/{eventId}/consumption: what you did with the evaluation."""
        report = ConsumptionReport(status, list(insight_ids_used) if insight_ids_used is not None else None)
        self._call("reportConsumption", {"eventId": event_id}, body=encode(report))

    # ---- labels

    def submit_labels(self, labels, idempotency_key=None):
        """POST /v1/labels: up to 1,000 labels (BatchTooLargeError beyond, before sending), one
        result each. The Idempotency-Key (generated when None) is sent again on a retry, so a
        batch is never stored twice; a replayed answer has `replayed` True."""
        labels = [decode_request(Label, item, "labels[%d]" % index) if isinstance(item, dict) else item
                  for index, item in enumerate(labels)]
        if not 1 <= len(labels) <= MAX_LABELS:
            raise BatchTooLargeError("a label submission takes 1 to %d labels, not %d" % (MAX_LABELS, len(labels)))
        key = idempotency_key or str(uuid.uuid4())
        answer = self._call("submitLabels", body={"labels": encode(labels)}, headers={"Idempotency-Key": key})
        result = self._decode(LabelSubmissionResult, answer)
        result.replayed = answer.headers.get("idempotent-replayed") == "true"
        result.idempotency_key = key
        return result

    # ---- authorization, transparency, erasure

    def set_authorization(self, subject, status):
        """PUT /v1/authorization: a person's choice (AuthorizationChoice.DENIED or AUTHORIZED)."""
        change = AuthorizationChange(self._subject(subject, AuthorizationSubject), AuthorizationChoice(status))
        return self._decode(AuthorizationState, self._call("setAuthorization", body=encode(change)))

    def query_authorization(self, subject):
        """POST /v1/authorization/query: where a subject's choice stands."""
        query = AuthorizationQuery(self._subject(subject, AuthorizationSubject))
        return self._decode(AuthorizationState, self._call("queryAuthorization", body=encode(query)))

    def transparency(self, subject, limit=None, cursor=None, tenant=None):
        """POST /v1/subjects/transparency: the evaluations that carried a person, newest first."""
        query = TransparencyQuery(self._subject(subject, SubjectIdentifiers), limit, cursor, tenant)
        return self._decode(Transparency, self._call("subjectTransparency", body=encode(query)))

    def erase_subject(self, subject, tenant=None):
        """POST /v1/subjects/erasure (admin): unlink a person everywhere."""
        request = ErasureRequest(self._subject(subject, SubjectIdentifiers), tenant)
        return self._decode(ErasureResult, self._call("subjectErasure", body=encode(request)))

    @staticmethod
    def _subject(subject, cls):
        return decode_request(cls, subject, "subject") if isinstance(subject, dict) else subject

    # ---- catalog and proofs

    def catalog(self):
        """GET /v1/insights: the insight types, values and model versions served."""
        return self._decode(InsightCatalog, self._call("listInsights"))

    def signing_keys(self):
        """GET /v1/signing-keys: the JWKS that verifies receipt heads."""
        return self._decode(JSONWebKeySet, self._call("getSigningKeys", authenticate=False))

    def receipt_heads(self, instance=None, from_sequence=None, limit=None):
        """GET /v1/receipts/heads: the latest head of each instance, or one instance's chain from
        `from_sequence`. Each head's signature is verified."""
        query = {k: v for k, v in (("instance", instance), ("from", from_sequence), ("limit", limit)) if v is not None}
        heads = self._decode(ReceiptHeadList, self._call("listReceiptHeads", query=query))
        if self.verify_receipts:
            for head in heads.heads:
                payload, _ = self._verifier.verify_head(head.head)
                if (payload.instance, payload.sequence, payload.root) != (head.instance, head.sequence, head.root):
                                raise ReceiptInvalidError("a listed head's members differ from its signed payload")
        return heads

    def _fetch_signing_keys(self, etag):
        headers = {"Cache-Control": "no-cache"}
        if etag:
            headers["If-None-Match"] = etag
        answer = self._call("getSigningKeys", headers=headers, authenticate=False, expect=(200, 304))
        if answer.status == 304:
            return None, etag
        return self._decode(JSONWebKeySet, answer), answer.headers.get("etag")

    # ---- admin

    def callers(self):
        """GET /admin/v1/callers: the callers of the admin's tenant."""
        return self._decode(CallerList, self._call("listCallers")).callers

    def caller(self, caller_id):
        return self._decode(Caller, self._call("getCaller", {"callerId": caller_id}))

    def update_caller_quota(self, caller_id, rate=None, burst=None, training_capture=None):
        """PATCH /admin/v1/callers/{callerId}: rate, burst, training capture (at least one)."""
        patch = CallerQuotaPatch(rate, burst, training_capture)
        return self._decode(Caller, self._call("updateCallerQuota", {"callerId": caller_id}, body=encode(patch)))

    def caller_rate_limit(self, caller_id):
        return self._decode(RateLimitState, self._call("getCallerRateLimit", {"callerId": caller_id}))

    def reset_caller_rate_limit(self, caller_id):
        """POST …/rate-limit/reset: clear the penalty, forgive overdue reports so far (no refill)."""
        return self._decode(RateLimitState, self._call("resetCallerRateLimit", {"callerId": caller_id}))

    def rate_limits(self):
        """GET /admin/v1/rate-limits: every caller of the tenant with its rate-limit state."""
        return self._decode(RateLimitList, self._call("listRateLimits")).callers

    def caller_keys(self, caller_id):
        return self._decode(APIKeyList, self._call("listCallerKeys", {"callerId": caller_id})).keys

    def revoke_caller_key(self, caller_id, key_id):
        return self._decode(APIKeyInfo, self._call("revokeCallerKey", {"callerId": caller_id, "keyId": key_id}))

    # ---- transport

    def _decode(self, cls, answer):
        try:
            return decode(cls, json.loads(answer.body))
        except ValueError as error:
            raise UnexpectedResponseError("%s: %s" % (cls.__name__, error))

    def _call(self, operation, path_parameters=None, *, body=None, headers=None, query=None,
              authenticate=True, expect=None, retry=None):
        method, template, default_retry = OPERATIONS[operation]
        retry = retry or default_retry
        path = self._prefix + template.format(**{k: urllib.parse.quote(str(v), safe="") for k, v in (path_parameters or {}).items()})
        if query:
            path += "?" + urllib.parse.urlencode(query)
        sent = {"Accept": "application/json", "User-Agent": "insightd-client-python/" + __version__}
        if authenticate:
            sent["Authorization"] = "Bearer " + self._api_key
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        attempt = 0
        while True:
            attempt += 1
            try:
                status, answer_headers, answer_body = self._send(method, path, data, sent)
            except _Unsent as failure:
                if attempt <= self.max_retries:
                    time.sleep(self._wait(attempt, None))
                    continue
                raise TransportError(str(failure), may_have_reached_server=False) from None
            except _Lost as failure:
                if retry == "safe" and attempt <= self.max_retries:
                    time.sleep(self._wait(attempt, None))
                    continue
                raise TransportError(str(failure), may_have_reached_server=True) from None
            if status == 503 and retry == "safe" and attempt <= self.max_retries:
                wait = self._wait(attempt, answer_headers.get("retry-after"))
                if wait <= self.max_wait:
                    time.sleep(wait)
                    continue
            if (expect and status in expect) or (not expect and 200 <= status < 300):
                return _Answer(status, answer_headers, answer_body, attempt)
            error = self._problem(status, answer_headers, answer_body)
            error.attempts = attempt
            raise error

    def _wait(self, attempt, retry_after):
        if retry_after is not None:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                pass
        return self.backoff * 2 ** (attempt - 1)

    @staticmethod
    def _problem(status, headers, body):
        try:
            problem = decode(Problem, json.loads(body))
        except ValueError:
            return UnexpectedResponseError("HTTP %d without a problem answer" % status)
        retry_after = headers.get("retry-after")
        seconds = problem.retry_after_seconds
        if retry_after is not None:
            try:
                seconds = float(retry_after)
            except ValueError:
                pass
        code = problem.code.value if isinstance(problem.code, Enum) else problem.code
        return PROBLEM_ERRORS.get(code, ProblemError)(problem, retry_after=seconds, rate_limit=headers.get("ratelimit"))

    def _send(self, method, path, data, headers):
        if self._scheme == "https":
            connection = http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self._ssl_context)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        try:
            try:
                connection.connect()
            except (OSError, ssl.SSLError) as error:
                raise _Unsent("cannot connect to insightd: %s" % error)
            try:
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                answer = response.read()
            except socket.timeout:
                raise _Lost("no answer within %s s" % self.timeout)
            except (OSError, http.client.HTTPException) as error:
                raise _Lost("the connection failed: %s" % error)
            return response.status, {k.lower(): v for k, v in response.getheaders()}, answer
        finally:
            connection.close()


class _Unsent(Exception):
    """The request did not leave: it cannot have reached insightd."""


class _Lost(Exception):
    """The request may have reached insightd, but no answer came back."""
