package io.insightd.client;

/**
 * An answer whose {@code Insight-Receipt} does not prove it: missing or malformed, signed by no
 * key of the service's JWKS, a body that does not lead to the signed root, a head that does not
 * follow the instance's head seen before, another tenant's or environment's answer, or keys
 * that could not be fetched to check it (the cause). Never retried: do not act on the answer;
 * it was recorded, so do not evaluate again either.
 */
public final class ReceiptException extends InsightException {
    private static final long serialVersionUID = 1L;

    ReceiptException(String detail) {
        this(detail, null);
    }

    ReceiptException(String detail, Throwable cause) {
        super("insightd: receipt invalid: " + detail, cause);
    }
}
