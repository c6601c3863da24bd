package io.insightd.client;

import java.time.Duration;

/** {@code evaluationNotFound}: No evaluation with that id for this caller and environment (404). */
public final class EvaluationNotFoundException extends ProblemException {
    private static final long serialVersionUID = 1L;

    EvaluationNotFoundException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "evaluationNotFound", detail, field, reason, retryAfter, attempts);
    }
}
