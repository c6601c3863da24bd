package io.insightd.client;

import java.time.Duration;

/** {@code overrideNotAllowed}: A production key sent the sandbox-only {@code Insight-Override} (403). */
public final class OverrideNotAllowedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    OverrideNotAllowedException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "overrideNotAllowed", detail, field, reason, retryAfter, attempts);
    }
}
