package io.insightd.client;

import java.time.Duration;

/** {@code notFound}: No such path (404): check the base URL. */
public final class NotFoundException extends ProblemException {
    private static final long serialVersionUID = 1L;

    NotFoundException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "notFound", detail, field, reason, retryAfter, attempts);
    }
}
