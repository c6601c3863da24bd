package io.insightd.client;

import java.time.Duration;

/** {@code methodNotAllowed}: The path exists but not with that method (405). */
public final class MethodNotAllowedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    MethodNotAllowedException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "methodNotAllowed", detail, field, reason, retryAfter, attempts);
    }
}
