package io.insightd.client;

import java.util.List;

/**
 * A request decoded from JSON ({@link EvaluationRequest#fromJson}, {@link EvaluationRequest.Interaction#fromJson})
 * with a member its schema lacks: {@link #path()} names it in the request body
 * ({@code interaction.interaction}: the kit's object wrapped once too often;
 * {@code transaction.newCounterParty}: a misspelt name). Nothing was sent.
 */
public final class UnknownMemberException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final String path;
    private final String schema;
    private final transient List<String> members;

    UnknownMemberException(String path, String schema, List<String> members) {
        super("unknown member " + path + ": " + schema + " has " + String.join(", ", members));
        this.path = path;
        this.schema = schema;
        this.members = List.copyOf(members);
    }

    /** The member, from the request body's root. */
    public String path() {
        return path;
    }

    /** The schema that lacks it. */
    public String schema() {
        return schema;
    }

    /** The members the schema has. */
    public List<String> members() {
        return members;
    }
}
