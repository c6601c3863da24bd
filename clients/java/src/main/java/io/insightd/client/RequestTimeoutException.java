package io.insightd.client;

import java.time.Duration;

/** {@code requestTimeout}: The request did not arrive in time (408). */
public final class RequestTimeoutException extends ProblemException {
    private static final long serialVersionUID = 1L;

    RequestTimeoutException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "requestTimeout", detail, field, reason, retryAfter, attempts);
    }
}
