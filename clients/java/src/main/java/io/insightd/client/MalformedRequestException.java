package io.insightd.client;

import java.time.Duration;

/** {@code malformedRequest}: Not valid HTTP/1.1 (400). */
public final class MalformedRequestException extends ProblemException {
    private static final long serialVersionUID = 1L;

    MalformedRequestException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "malformedRequest", detail, field, reason, retryAfter, attempts);
    }
}
