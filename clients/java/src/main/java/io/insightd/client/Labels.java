package io.insightd.client;

import java.time.LocalDate;
import java.util.List;

/** The types of {@code POST /v1/labels}. */
public final class Labels {
    /** The most labels one submission takes. */
    public static final int MAX_PER_SUBMISSION = 1000;

    private Labels() {}

    /**
     * One label: {@code fraudType} is required for {@code CONFIRMED_FRAUD} and null otherwise;
     * {@code discoveredAt} is a UTC calendar date.
     */
    public record Label(String insightId, LabelOutcome outcome, FraudType fraudType, LocalDate discoveredAt) {
        public static Label confirmedFraud(String insightId, FraudType type, LocalDate discoveredAt) {
            return new Label(insightId, LabelOutcome.CONFIRMED_FRAUD, type, discoveredAt);
        }

        public static Label confirmedLegitimate(String insightId, LocalDate discoveredAt) {
            return new Label(insightId, LabelOutcome.CONFIRMED_LEGITIMATE, null, discoveredAt);
        }
    }

    /** One label's result; {@code field} and {@code detail} explain an invalid one. */
    public record Result(int index, String insightId, LabelResultStatus status, String field, String detail) {}

    /** The results counted per status. */
    public record Summary(int accepted, int duplicate, int conflict, int unknownInsight, int invalid) {}

    /**
     * The answer: one result per label, in order. {@code replayed} is true when it replays an
     * earlier submission with the same {@code Idempotency-Key}.
     */
    public record Results(List<Result> results, Summary summary, boolean replayed) {}
}
