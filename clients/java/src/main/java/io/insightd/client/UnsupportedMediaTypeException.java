package io.insightd.client;

import java.time.Duration;

/** {@code unsupportedMediaType}: The body is not {@code application/json} (415). */
public final class UnsupportedMediaTypeException extends ProblemException {
    private static final long serialVersionUID = 1L;

    UnsupportedMediaTypeException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "unsupportedMediaType", detail, field, reason, retryAfter, attempts);
    }
}
