"""Schemathesis hooks for e2e/api-fuzz.sh (loaded by e2e/schemathesis.toml).

Each hook bridges one rule that docs/api.md and openapi/openapi.json state in prose but JSON
Schema cannot express, or keeps generation within the time budget. None of them changes a
response, drops a check for a whole operation, or filters a failure: where a built-in check is
switched off for one operation (schemathesis.toml says which), a stricter check here replaces it.
"""

import json
import os
import secrets
import uuid
import zlib
from collections.abc import MutableMapping

import jsonschema_rs
import schemathesis
from schemathesis.core.failures import Failure
from schemathesis.core.parameters import ParameterLocation

_VISIBLE_ASCII = frozenset(range(0x21, 0x7F))
_labels_schemas = {}
_known = None
# {eventId: [insightId, ...]} of the evaluations the run itself created (after_call).
_answered = {}


def _known_evaluations():
    """{eventId: [insightId, ...]} of the evaluations e2e/api-fuzz.sh made before the run."""
    global _known
    if _known is None:
        path = os.environ.get("API_FUZZ_KNOWN")
        _known = json.load(open(path)) if path else {}
    return _known


def _is_stateful(case):
    """Stateful cases take their ids from the document's links, which the run must prove (api_fuzz_report.py)."""
    meta = case.meta
    return meta is not None and meta.phase.name == "stateful"


def _pick(value, choices):
    """One of `choices` chosen from `value` itself, so a seed replays the same requests."""
    return choices[zlib.crc32(repr(value).encode()) % len(choices)]


@schemathesis.hook
def before_load_schema(context, raw_schema):
    """Drop `contains`/`maxContains` from `Interaction.events` (for generating requests only).

    They say "sessionStart occurs once". Generating arrays under them makes hypothesis filter
    almost every draw: the coverage phase of createEvaluation alone ran over 10 minutes on
    2 cores without finishing; without them it takes seconds. The rule is still enforced by the
    server (422 `interaction.events[i]`), covered by the unit tests, and `before_call` below
    keeps positive cases within it.
    """
    events = raw_schema["components"]["schemas"]["Interaction"]["properties"]["events"]
    for schema in [events] + events.get("anyOf", []) + events.get("oneOf", []):
        schema.pop("contains", None)
        schema.pop("maxContains", None)
    # Kept aside to validate label submissions in `labels_items_are_judged`.
    schemas = raw_schema["components"]["schemas"]
    _labels_schemas["Label"] = _resolved(schemas["Label"], schemas)
    submission = dict(_resolved(schemas["LabelSubmission"], schemas))
    submission["properties"] = dict(submission["properties"])
    submission["properties"]["labels"] = {k: v for k, v in submission["properties"]["labels"].items() if k != "items"}
    _labels_schemas["LabelSubmission without items"] = submission


@schemathesis.hook
def before_call(context, case, kwargs):
    label = case.operation.label
    if label == "POST /v1/labels":
        _fresh_idempotency_key(case)
        if not _is_stateful(case):
            _known_insights(case)
    elif label == "POST /v1/evaluations":
        _thin_override_header(case)
        _fresh_request_id(case)
        if _is_positive(case):
            _order_events(case)
    elif label == "POST /v1/evaluations/{eventId}/consumption":
        if _is_stateful(case):
            _only_insights_of_the_evaluation(case)
            _intervention_of_no_template(case)
        else:
            _known_event(case)
    elif label in ("PATCH /admin/v1/callers/{callerId}", "POST /admin/v1/callers/{callerId}/rate-limit/reset",
                   "POST /admin/v1/callers/{callerId}/keys/{keyId}/revoke"):
        _spare_own_caller(case)
    elif label in ("GET /admin/v1/model-performance", "HEAD /admin/v1/model-performance"):
        if _is_positive(case):
            _period_within_limits(case)
            _own_environment(case)
    elif label in ("POST /v1/subjects/transparency", "POST /v1/subjects/erasure"):
        if _is_positive(case):
            _own_tenant(case)
            _handed_out_cursor(case)


def _intervention_of_no_template(case):
    """In positive reports to an evaluation that exists, record that the caller did nothing.

    An intervention's template must be in the tenant's catalogue and its times within the
    evaluation's life (docs/api.md "Interventions"): documented 422s (`interventionTemplateUnknown`,
    `interventionTimeInvalid`, …) that no schema can state. The shape rules are in the schema and
    stay tested by every other case.
    """
    body = case.body
    if _is_positive(case) and isinstance(body, dict) and isinstance(body.get("intervention"), dict):
        body["intervention"] = {"kind": "none"}


def _known_event(case):
    """Aim half the consumption reports at evaluations that exist.

    Outside the stateful phase nothing lets the fuzzer learn an eventId (the document's links
    serve only the stateful phase, and schemathesis' dependency inference takes `eventId` for an
    `Event` resource that no operation returns), so every generated report was a 404 and the
    consumption logic (204, repeat, 409 conflict) went untested. For half the cases
    whose path is valid, the eventId becomes one of the evaluations made before the run; in
    positive cases `insightIdsUsed` then names insights of that evaluation, as the document
    requires (an id of another evaluation is a documented 422). Negative parts stay as they are.
    """
    known = _known_evaluations()
    params, meta = case.path_parameters, case.meta
    if not known or meta is None or not isinstance(params, MutableMapping) or meta.is_negative_at(ParameterLocation.PATH):
        return
    generated = params.get("eventId")
    if zlib.crc32(repr(generated).encode()) % 2:
        return
    event = _pick(generated, sorted(known))
    params["eventId"] = event
    body = case.body
    if _is_positive(case) and isinstance(body, dict) and isinstance(body.get("insightIdsUsed"), list):
        ids = known[event]
        body["insightIdsUsed"] = [ids[i] for i in range(min(len(body["insightIdsUsed"]), len(ids)))]
    _intervention_of_no_template(case)


@schemathesis.hook
def after_call(context, case, response):
    """Remember every evaluation the run creates (eventId -> its insight ids), for the hook below."""
    if case.operation.label != "POST /v1/evaluations" or response.status_code != 200:
        return
    try:
        body = response.json()
        _answered[body["eventId"]] = [insight["insightId"] for insight in body["insights"]]
    except (ValueError, KeyError, TypeError):
        return


def _only_insights_of_the_evaluation(case):
    """In positive stateful reports, keep only `insightIdsUsed` entries of the evaluation named.

    The stateful phase follows the document's `reportConsumption` link: the eventId and the first
    `insightIdsUsed` entry come from a real evaluation's answer, and schemathesis merges them into
    a generated body, so generated entries after the first remain. An id of another evaluation is
    a documented 422 that JSON Schema cannot state, which the positive-data check would report.
    Those entries are dropped (not replaced, so the ids that remain are the link's own); the
    eventId is never touched, and negative cases stay as generated.
    """
    params, body = case.path_parameters, case.body
    if not _is_positive(case) or not isinstance(params, MutableMapping) or not isinstance(body, dict):
        return
    event = params.get("eventId")
    ids = _answered.get(event) if isinstance(event, str) else None
    if ids is None:
        ids = _known_evaluations().get(event) if isinstance(event, str) else None
    if ids is not None and isinstance(body.get("insightIdsUsed"), list):
        body["insightIdsUsed"] = [i for i in body["insightIdsUsed"] if i in ids]


def _own_environment(case):
    """In positive model-performance cases, ask for the fuzzing key's own environment (production).

    An admin key reads its own environment only; the other is a documented 403 (openapi.json says
    so in the parameter's description; JSON Schema cannot tie a parameter to the key), which the
    positive-data check would report. Negative cases stay as generated.
    """
    query = case.query
    if isinstance(query, MutableMapping) and "environment" in query:
        query["environment"] = "production"


def _period_within_limits(case):
    """In positive model-performance cases, end the period on its first day when it breaks the rule.

    `to` must not be before `from` nor more than 91 days after it (openapi.json states it in the
    parameter's description; JSON Schema cannot relate two parameters), else the answer is a
    documented 422 that the positive-data check would report. Only a period that breaks the rule
    is changed, and only `to`; negative cases stay as generated.
    """
    import datetime
    query = case.query
    if not isinstance(query, MutableMapping):
        return
    start, end = query.get("from"), query.get("to")
    if not isinstance(start, str) or not isinstance(end, str):
        return
    try:
        first, last = datetime.date.fromisoformat(start), datetime.date.fromisoformat(end)
    except ValueError:
        return
    if not 0 <= (last - first).days <= 91:
        query["to"] = start


def _own_tenant(case):
    """In positive subject cases, name the key's own tenant in the optional `tenant` guard.

    `tenant`, when given, must be the tenant of the key (openapi.json says so in its
    description; which tenant a key belongs to is not in the schema), else the answer is a
    documented 422 that the positive-data check would report. The fuzzing keys belong to tenant
    `default`; only a `tenant` member that is present is changed, and negative cases stay as
    generated.
    """
    body = case.body
    if isinstance(body, MutableMapping) and "tenant" in body:
        body["tenant"] = "default"


def _handed_out_cursor(case):
    """In positive transparency cases, send back a cursor the daemon handed out.

    A cursor is sealed under a key of the daemon's and bound to the tenant and environment
    (openapi.json: one not handed out is a documented 422), so no cursor generated from its
    pattern is valid. e2e/api-fuzz.sh asks the daemon for one before the run (API_FUZZ_CURSOR);
    only a `cursor` member that is present is changed, and negative cases stay as generated.
    """
    body = case.body
    cursor = os.environ.get("API_FUZZ_CURSOR")
    if cursor and isinstance(body, MutableMapping) and "cursor" in body:
        body["cursor"] = cursor


def _spare_own_caller(case):
    """Aim admin writes that name the fuzzing caller itself at its peer caller instead.

    The fuzzer finds its own caller id (GET /admin/v1/callers, stateful links) and PATCHes it
    with generated rates such as 0.001/s: every later evaluation would then be a documented
    `429 rateLimitExceeded`, and the evaluation logic would go untested. Likewise it finds its own
    key id (GET /admin/v1/callers/{callerId}/keys, inferred links) and revokes it: every later
    request would be `401`. The peer is a real caller, so the write is still tested end to end
    (a key of the fuzzing caller is `404 keyNotFound` there); other ids are left as generated.
    """
    own, peer = os.environ.get("API_FUZZ_CALLER_ID"), os.environ.get("API_FUZZ_PEER_CALLER_ID")
    params = case.path_parameters
    if own and peer and isinstance(params, MutableMapping) and params.get("callerId") == own:
        params["callerId"] = peer


def _thin_override_header(case):
    """Keep `Insight-Override` off most evaluation cases that are not about that header.

    The key is a production key, so any request carrying the sandbox-only header is the
    documented `403 overrideNotAllowed` before its body is read. The coverage phase puts the
    header on nearly every case (about 700 of them), so none of its body cases would reach
    validation or the model; fuzzing puts it on about half. So: a case generated to test the
    header itself (a coverage case naming it, or a case whose headers are the invalid part)
    keeps it, and so does every fuzzing case whose value has a length divisible by 4 (about a
    quarter, decided from the value so a seed replays the same requests); the others lose it.
    Dropping an optional header changes neither a positive case's validity nor what makes a
    negative case invalid.
    """
    headers = case.headers
    meta = case.meta
    if not isinstance(headers, MutableMapping) or meta is None:
        return
    names = [name for name in headers if name.lower() == "insight-override"]
    if not names:
        return
    data = meta.phase.data
    if getattr(data, "parameter", None) == names[0] or meta.is_negative_at(ParameterLocation.HEADER):
        return
    if meta.phase.name == "fuzzing" and isinstance(headers[names[0]], str) and len(headers[names[0]]) % 4 == 0:
        return
    del headers[names[0]]


def _fresh_request_id(case):
    """Give every evaluation its own `requestId` when it names a valid one.

    Generated cases reuse a few requestId values with different bodies; the server then answers
    the documented `422 idempotencyKeyReused` (the same requestId with other bytes is not a
    retry: docs/api.md, "Retries"), which the positive-data check reports as a valid request
    refused. A valid string is replaced by a fresh one of the same length from 16 characters on
    (so the 128-character boundary is still sent), else by a fresh 17-character one; it starts
    with a letter, so that it never looks like a card number. Anything else is left alone.
    """
    body = case.body
    if not isinstance(body, dict):
        return
    value = body.get("requestId")
    if isinstance(value, str) and 1 <= len(value) <= 128 and all(ord(c) > 0x1F and not 0x7F <= ord(c) <= 0x9F for c in value):
        fresh = "t" + uuid.uuid4().hex + secrets.token_hex(64)
        body["requestId"] = fresh[: max(len(value), 17)]


def _fresh_idempotency_key(case):
    """Give every labels request its own valid `Idempotency-Key`.

    Generated cases reuse a few key values with different bodies; the server then answers the
    documented `422 idempotencyKeyReused`, which the positive-data check reports as a valid
    request refused. A valid key is replaced by another valid key (same length from 16 on, so
    the 255-character boundary is still sent); an invalid one is left alone, so the negative
    cases for the header still reach the server.
    """
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() != "idempotency-key":
            continue
        value = headers[name]
        if isinstance(value, str) and 1 <= len(value) <= 255 and all(ord(c) in _VISIBLE_ASCII for c in value):
            fresh = uuid.uuid4().hex
            if len(value) >= 16:
                fresh = (fresh + secrets.token_hex(len(value)))[: len(value)]
            headers[name] = fresh


def _known_insights(case):
    """Name insights that exist in about half the label items (any mode; only `insightId`).

    A generated insightId never exists, so every item was `unknownInsight`: the accepted,
    duplicate and conflict paths went untested. An item whose insightId is a valid string
    gets, for about half the values, an insight made before the run instead (still valid).
    Not applied in the stateful phase, where the `submitLabels` link supplies real insight ids.
    """
    known = _known_evaluations()
    body = case.body
    if not known or not isinstance(body, dict) or not isinstance(body.get("labels"), list):
        return
    insights = sorted(i for ids in known.values() for i in ids)
    for item in body["labels"]:
        if isinstance(item, dict) and isinstance(item.get("insightId"), str) and 1 <= len(item["insightId"]) <= 64 \
                and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in item["insightId"]) \
                and zlib.crc32(item["insightId"].encode("utf-8", "surrogatepass")) % 2 == 0:
            item["insightId"] = _pick(item["insightId"], insights)


def _order_events(case):
    """Keep positive createEvaluation cases within the event rules JSON Schema cannot state.

    docs/api.md: the first event is `sessionStart` at t 0 and occurs once; `t` never decreases
    (422 naming the event otherwise). Only positive cases are touched: events are sorted by `t`
    (stable, so the leading sessionStart at 0 stays first) and later sessionStarts are dropped.
    """
    body = case.body
    if not isinstance(body, dict):
        return
    interaction = body.get("interaction")
    events = interaction.get("events") if isinstance(interaction, dict) else None
    if not isinstance(events, list) or not all(isinstance(e, dict) and _is_number(e.get("t")) for e in events):
        return
    ordered = sorted(events, key=lambda e: e["t"])
    kept = ordered[:1] + [e for e in ordered[1:] if e.get("type") != "sessionStart"]
    if kept != events:
        interaction["events"] = kept


def _is_number(value):
    # JSON Schema counts 21173.0 as an integer, and generated events use both spellings.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_positive(case):
    meta = case.meta
    return meta is not None and not meta.generation.mode.is_negative


@schemathesis.check
def labels_items_are_judged(ctx, response, case):
    """Replaces `negative_data_rejection` for submitLabels only (see schemathesis.toml).

    docs/api.md and the LabelSubmission schema: "an item that breaks the `Label` schema does not
    fail the request but gets the per-item result `invalid`". So a request whose only invalid
    parts are label items is rightly answered 200, which the built-in check reports. This check
    is stricter where it can be: a request invalid outside the items (the envelope, the count,
    the Idempotency-Key) must not be answered 200, and in a 200 every item that breaks `Label`
    must come back `invalid`. (A schema-valid item may rightly be `invalid` too: the date range
    2000-01-01..today is prose, not schema.)
    """
    if case.operation.label != "POST /v1/labels" or response.status_code != 200:
        return None
    body = case.body
    key = next((v for k, v in (case.headers or {}).items() if k.lower() == "idempotency-key"), None)
    if not (isinstance(key, str) and 1 <= len(key) <= 255 and all(ord(c) in _VISIBLE_ASCII for c in key)):
        raise Failure(operation=case.operation.label, title="Invalid Idempotency-Key accepted",
                      message=f"200 for Idempotency-Key {key!r}; expected 400 contextInvalid")
    if not jsonschema_rs.validator_for(_labels_schemas["LabelSubmission without items"]).is_valid(body):
        raise Failure(operation=case.operation.label, title="Invalid label submission accepted",
                      message="200 for a body that breaks LabelSubmission outside its items; expected 422")
    results = response.json().get("results", [])
    label = jsonschema_rs.validator_for(_labels_schemas["Label"])
    for index, item in enumerate(body["labels"]):
        status = results[index].get("status") if index < len(results) else None
        if not label.is_valid(item) and status != "invalid":
            raise Failure(operation=case.operation.label, title="Invalid label item not reported invalid",
                          message=f"labels[{index}] breaks the Label schema but its result is {status!r}")
    return None


def _resolved(schema, schemas, depth=0):
    """`schema` with every `#/components/schemas/X` reference inlined (these schemas are acyclic)."""
    if depth > 32:
        raise ValueError("schema references too deep")
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            return _resolved(schemas[ref.rsplit("/", 1)[1]], schemas, depth + 1)
        return {k: _resolved(v, schemas, depth + 1) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_resolved(v, schemas, depth + 1) for v in schema]
    return schema
