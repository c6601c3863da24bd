package io.insightd.client;

import java.time.Duration;

/** {@code notImplemented}: A transfer coding other than chunked (501). */
public final class NotImplementedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    NotImplementedException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "notImplemented", detail, field, reason, retryAfter, attempts);
    }
}
