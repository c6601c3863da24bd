package io.insightd.client;

import java.time.Duration;

/** {@code forbidden}: The API key lacks the role this endpoint needs (403). */
public final class ForbiddenException extends ProblemException {
    private static final long serialVersionUID = 1L;

    ForbiddenException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "forbidden", detail, field, reason, retryAfter, attempts);
    }
}
