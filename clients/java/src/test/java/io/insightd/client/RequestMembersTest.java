package io.insightd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A request decoded from the caller's JSON refuses a member the API lacks, naming its path. */
class RequestMembersTest {
    /** The web kit's object, as InsightCapture's session.finish() returns it. */
    static final String KIT = "{\"events\": [{\"t\": 0, \"type\": \"sessionStart\"}, {\"t\": 900, \"type\": \"submit\"}],"
            + " \"source\": {\"kit\": \"insight-capture-web\", \"version\": \"1.0.0\", \"platform\": \"web\"}}";
    static final String HEAD = "{\"operationCategory\": \"payment\", \"insights\": [{\"type\": \"isLikelyBeingCoached\", \"schemaVersion\": 1}], ";

    @Test
    void kitObjectWrappedTwiceIsRefusedByItsPath() {
        UnknownMemberException refused = assertThrows(UnknownMemberException.class,
                () -> EvaluationRequest.fromJson(HEAD + "\"interaction\": {\"interaction\": " + KIT + "}}"));
        assertEquals("interaction.interaction", refused.path());
        assertTrue(refused.getMessage().contains("interaction.interaction"), refused.getMessage());
        assertEquals("interaction.interaction",
                assertThrows(UnknownMemberException.class, () -> EvaluationRequest.Interaction.fromJson("{\"interaction\": " + KIT + "}")).path());
    }

    @Test
    void misspeltMemberIsRefusedByItsPath() {
        UnknownMemberException refused = assertThrows(UnknownMemberException.class,
                () -> EvaluationRequest.fromJson(HEAD + "\"transaction\": {\"newCounterParty\": true}}"));
        assertEquals("transaction.newCounterParty", refused.path());
        assertTrue(refused.members().contains("newCounterparty"));
        assertEquals("interaction.events[0].x", assertThrows(UnknownMemberException.class,
                () -> EvaluationRequest.fromJson(HEAD + "\"interaction\": {\"events\": [{\"t\": 0, \"type\": \"sessionStart\", \"x\": 1}]}}")).path());
    }

    @Test
    void kitObjectForwardedUnchangedDecodesWhole() {
        EvaluationRequest.Interaction interaction = EvaluationRequest.Interaction.fromJson(KIT);
        assertEquals(2, interaction.events().size());
        assertEquals(Platform.WEB, interaction.source().platform());
        assertEquals(2, EvaluationRequest.fromJson(HEAD + "\"interaction\": " + KIT + "}").interaction().events().size());
    }
}
