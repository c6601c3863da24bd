package io.insightd.client;

import java.time.Duration;

/** {@code keyNotFound}: Admin API: the key is not one of that caller's (404). */
public final class KeyNotFoundException extends ProblemException {
    private static final long serialVersionUID = 1L;

    KeyNotFoundException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "keyNotFound", detail, field, reason, retryAfter, attempts);
    }
}
