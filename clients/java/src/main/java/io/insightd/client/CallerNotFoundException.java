package io.insightd.client;

import java.time.Duration;

/** {@code callerNotFound}: Admin API: no caller with that id in the admin's tenant (404). */
public final class CallerNotFoundException extends ProblemException {
    private static final long serialVersionUID = 1L;

    CallerNotFoundException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "callerNotFound", detail, field, reason, retryAfter, attempts);
    }
}
