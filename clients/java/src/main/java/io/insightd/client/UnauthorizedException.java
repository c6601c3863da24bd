package io.insightd.client;

import java.time.Duration;

/** {@code unauthorized}: No API key, or one that is unknown or revoked (401). */
public final class UnauthorizedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    UnauthorizedException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "unauthorized", detail, field, reason, retryAfter, attempts);
    }
}
