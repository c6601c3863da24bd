package io.insightd.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The body of {@code POST /v1/evaluations}. Optional members are null when absent. Build one
 * with {@link #builder(OperationCategory)}.
 *
 * @param requestId yours (1–128 characters), echoed and checked; generated when null
 */
public record EvaluationRequest(String requestId, OperationCategory operationCategory, List<InsightRequest> insights,
                                Subject subject, Interaction interaction, Transaction transaction, Initiator initiator) {

    /** Asks for one insight; {@code modelVersion} null means the current model. */
    public record InsightRequest(String type, int schemaVersion, String modelVersion) {
        /** The coaching insight, schema 1, current model. */
        public static InsightRequest isLikelyBeingCoached() {
            return new InsightRequest(InsightType.IS_LIKELY_BEING_COACHED.wire(), 1, null);
        }
    }

    /** The identifiers the service hashes on arrival (velocity, opt-outs). */
    public record Subject(String account, String device, String counterparty) {}

    /**
     * The session's timing: {@code events} or {@code summary} (not both), {@code device} facts,
     * and the {@code source}: the capture kit that observed it.
     */
    public record Interaction(List<InteractionEvent> events, Map<String, Double> summary, DeviceFacts device,
                              InteractionSource source) {
        /**
         * The capture kit's object, forwarded unchanged: its JSON text as the kit produced it.
         *
         * @throws UnknownMemberException for a member the API lacks, named by its path
         *     ({@code interaction.interaction}: the object wrapped once too often)
         * @throws IllegalArgumentException when it is not JSON of an Interaction's shape
         */
        public static Interaction fromJson(String json) {
            return RequestMembers.decode(json, Interaction.class, "Interaction", "interaction");
        }
    }

    /**
     * The capture kit that produced the interaction: {@code kit} and {@code version} are tokens,
     * never text; the {@code platform} selects the model's thresholds; {@code droppedEvents}, when
     * the kit counts them, is how many events it could not keep (null: not counted).
     */
    public record InteractionSource(String kit, String version, Platform platform, Integer droppedEvents) {}

    /** One event, {@code t} milliseconds after {@code sessionStart}. */
    public record InteractionEvent(int t, EventType type, InputField field) {}

    /** What the device knows about the session. */
    public record DeviceFacts(Boolean activeCall, Boolean callStartedBeforeSession, Boolean screenSharing, Boolean remoteAccessApp) {}

    /** The facts the decision policy reads. */
    public record Transaction(Boolean newCounterparty, AmountBand amountBand) {}

    /** Who chose the operation: a person, or an AI agent in your app (docs/decisions.md). */
    public record Initiator(InitiatorKind kind, AgentFacts agent) {}

    /** What an AI agent's operation rests on. */
    public record AgentFacts(Boolean userRequested, List<UntrustedContext> untrustedContext, Boolean argumentsFromUntrustedContext,
                             List<SideEffect> sideEffects) {}

    /**
     * A request written as JSON (the body of {@code POST /v1/evaluations}).
     *
     * @throws UnknownMemberException for a member the API lacks, named by its path
     *     ({@code transaction.newCounterParty}: a misspelt name)
     * @throws IllegalArgumentException when it is not JSON of an EvaluationRequest's shape
     */
    public static EvaluationRequest fromJson(String json) {
        return RequestMembers.decode(json, EvaluationRequest.class, "EvaluationRequest", "");
    }

    /** A request with the same members and another {@code requestId}. */
    public EvaluationRequest withRequestId(String id) {
        return new EvaluationRequest(id, operationCategory, insights, subject, interaction, transaction, initiator);
    }

    /** Starts a request for an operation of that category. */
    public static Builder builder(OperationCategory category) {
        return new Builder(category);
    }

    /** Builds an {@link EvaluationRequest}. */
    public static final class Builder {
        private final OperationCategory category;
        private final List<InsightRequest> insights = new ArrayList<>();
        private String requestId;
        private Subject subject;
        private Interaction interaction;
        private Transaction transaction;
        private Initiator initiator;

        private Builder(OperationCategory category) {
            this.category = category;
        }

        /** Adds an insight to ask for (1 to 4). */
        public Builder insight(InsightRequest insight) { insights.add(insight); return this; }

        /** Your id for the transaction. */
        public Builder requestId(String id) { requestId = id; return this; }

        public Builder subject(Subject value) { subject = value; return this; }

        public Builder interaction(Interaction value) { interaction = value; return this; }

        public Builder transaction(Transaction value) { transaction = value; return this; }

        public Builder initiator(Initiator value) { initiator = value; return this; }

        public EvaluationRequest build() {
            return new EvaluationRequest(requestId, category, List.copyOf(insights), subject, interaction, transaction, initiator);
        }
    }
}
