package io.insightd.client;

import java.time.Duration;

/** {@code headersTooLarge}: The header section is over the service's limit (431). */
public final class HeadersTooLargeException extends ProblemException {
    private static final long serialVersionUID = 1L;

    HeadersTooLargeException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "headersTooLarge", detail, field, reason, retryAfter, attempts);
    }
}
