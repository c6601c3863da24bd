package io.insightd.client;

import java.time.Duration;

/** {@code payloadTooLarge}: The body is over the service's limit (413). */
public final class PayloadTooLargeException extends ProblemException {
    private static final long serialVersionUID = 1L;

    PayloadTooLargeException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "payloadTooLarge", detail, field, reason, retryAfter, attempts);
    }
}
