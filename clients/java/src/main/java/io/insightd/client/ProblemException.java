package io.insightd.client;

import java.time.Duration;
import java.util.Optional;

/**
 * A request the service refused, with its RFC 9457 problem: switch on {@link #code()}.
 * {@link #retryAfter()} is the service's advice (a 503 or 429 that carries it recorded
 * nothing); the client has already retried where that was safe.
 */
public final class ProblemException extends InsightException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final ProblemCode code;
    private final String rawCode;
    private final String detail;
    private final String field;
    private final RateLimitReason reason;
    private final Duration retryAfter;
    private final int attempts;

    ProblemException(int status, String rawCode, String detail, String field, RateLimitReason reason, Duration retryAfter,
                     int attempts) {
        super("insightd: " + rawCode + " (" + status + ")" + (field == null ? "" : " " + field)
                + (detail == null || detail.isEmpty() ? "" : ": " + detail)
                + (retryAfter == null ? "" : " (retry after " + retryAfter.toMillis() + " ms)"), null);
        this.status = status;
        this.code = ProblemCode.of(rawCode);
        this.rawCode = rawCode;
        this.detail = detail;
        this.field = field;
        this.reason = reason;
        this.retryAfter = retryAfter;
        this.attempts = attempts;
    }

    /** The HTTP status. */
    public int status() { return status; }

    /** The problem code; {@code UNRECOGNIZED} for one a later service version added ({@link #rawCode()}). */
    public ProblemCode code() { return code; }

    /** The code as the service sent it. */
    public String rawCode() { return rawCode; }

    /** The service's explanation, for logs; do not parse it. */
    public String detail() { return detail; }

    /** The offending input ({@code insights[1].schemaVersion}, {@code (body)}, a header), when named. */
    public Optional<String> field() { return Optional.ofNullable(field); }

    /** Which limit a 429 hit. */
    public Optional<RateLimitReason> reason() { return Optional.ofNullable(reason); }

    /** The service's advice on when to retry ({@code Retry-After}). */
    public Optional<Duration> retryAfter() { return Optional.ofNullable(retryAfter); }

    /** How many times the client sent the request. */
    public int attempts() { return attempts; }

    /** Whether the service said a retry may succeed: a 503 or 429 with {@code Retry-After}. */
    public boolean mayRetry() {
        return retryAfter != null && (status == 429 || status >= 500);
    }
}
