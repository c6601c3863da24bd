package io.insightd.client;

import java.time.Duration;

/** {@code rateLimitExceeded}: A rate limit is exceeded (429): {@link #reason()} says which, {@link #retryAfter()} when to try again. Proceed without the insight; report consumption. */
public final class RateLimitExceededException extends ProblemException {
    private static final long serialVersionUID = 1L;

    RateLimitExceededException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "rateLimitExceeded", detail, field, reason, retryAfter, attempts);
    }
}
