package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** An RFC 9457 problem {@code code} of insightd (docs/api.md, "Errors"): branch on it, never on the detail. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum ProblemCode {
    CONTEXT_INVALID("contextInvalid"),
    UNAUTHORIZED("unauthorized"),
    FORBIDDEN("forbidden"),
    DENIED("denied"),
    OVERRIDE_NOT_ALLOWED("overrideNotAllowed"),
    NOT_FOUND("notFound"),
    EVALUATION_NOT_FOUND("evaluationNotFound"),
    CALLER_NOT_FOUND("callerNotFound"),
    KEY_NOT_FOUND("keyNotFound"),
    METHOD_NOT_ALLOWED("methodNotAllowed"),
    CONSUMPTION_CONFLICT("consumptionConflict"),
    IDEMPOTENCY_KEY_REUSED("idempotencyKeyReused"),
    UNSUPPORTED_MEDIA_TYPE("unsupportedMediaType"),
    PAYLOAD_TOO_LARGE("payloadTooLarge"),
    HEADERS_TOO_LARGE("headersTooLarge"),
    MALFORMED_REQUEST("malformedRequest"),
    REQUEST_TIMEOUT("requestTimeout"),
    NOT_IMPLEMENTED("notImplemented"),
    HTTP_VERSION_NOT_SUPPORTED("httpVersionNotSupported"),
    RATE_LIMIT_EXCEEDED("rateLimitExceeded"),
    SERVER_ERROR("serverError"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    ProblemCode(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static ProblemCode of(String wire) {
        for (ProblemCode value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
