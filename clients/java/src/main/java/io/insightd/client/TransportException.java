package io.insightd.client;

/** A request that got no HTTP answer: the host could not be reached, the connection was lost, or the timeout passed. */
public final class TransportException extends InsightException {
    private static final long serialVersionUID = 1L;

    private final boolean mayHaveArrived;
    private final int attempts;

    TransportException(Throwable cause, boolean mayHaveArrived, int attempts) {
        super("insightd: transport: " + cause, cause);
        this.mayHaveArrived = mayHaveArrived;
        this.attempts = attempts;
    }

    /** False when the request cannot have reached the service (no connection was made). */
    public boolean mayHaveArrived() { return mayHaveArrived; }

    /** How many times the client tried. */
    public int attempts() { return attempts; }
}
