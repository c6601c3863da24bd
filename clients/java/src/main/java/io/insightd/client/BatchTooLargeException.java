package io.insightd.client;

/** A label submission of no label or more than {@value Labels#MAX_PER_SUBMISSION}, refused before anything is sent: split the batch. */
public final class BatchTooLargeException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BatchTooLargeException(int size) {
        super("a submission holds 1 to " + Labels.MAX_PER_SUBMISSION + " labels, not " + size);
    }
}
