package io.insightd.client;

/**
 * Why a call to insightd failed as a whole: a {@link ProblemException} (the service refused; a
 * subclass per problem code), a {@link TransportException} (no answer), a
 * {@link ReceiptException} (an answer whose proof fails) or an
 * {@link UnexpectedResponseException} (an answer that breaks the API contract).
 * Insight-level failures are not thrown: they arrive per insight. Fail open: never let an
 * exception block the person's operation by itself.
 */
public abstract sealed class InsightException extends Exception
        permits ProblemException, TransportException, ReceiptException, UnexpectedResponseException {
    private static final long serialVersionUID = 1L;

    InsightException(String message, Throwable cause) {
        super(message, cause);
    }
}
