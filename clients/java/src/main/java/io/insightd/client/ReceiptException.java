package io.insightd.client;

/**
 * An answer whose {@code Insight-Receipt} does not prove it: missing or malformed, signed by no
 * key of the service's JWKS, a body that does not lead to the signed root, a head that does not
 * follow the instance's head seen before, or another tenant's or environment's answer. Never
 * retried: do not trust the answer.
 */
public final class ReceiptException extends InsightException {
    private static final long serialVersionUID = 1L;

    ReceiptException(String detail) {
        super("insightd: receipt invalid: " + detail, null);
    }
}
