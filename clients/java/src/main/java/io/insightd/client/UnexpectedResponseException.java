package io.insightd.client;

/**
 * A response that breaks the API contract (not the JSON the document promises, an answer to
 * another {@code requestId}, insights that do not match the request). Do not use it.
 */
public final class UnexpectedResponseException extends InsightException {
    private static final long serialVersionUID = 1L;

    UnexpectedResponseException(String detail, Throwable cause) {
        super("insightd: unexpected response: " + detail, cause);
    }
}
