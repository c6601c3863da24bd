package io.insightd.client;

import java.time.Duration;

/** {@code httpVersionNotSupported}: Not HTTP/1.0 or 1.1 (505). */
public final class HttpVersionNotSupportedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    HttpVersionNotSupportedException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "httpVersionNotSupported", detail, field, reason, retryAfter, attempts);
    }
}
