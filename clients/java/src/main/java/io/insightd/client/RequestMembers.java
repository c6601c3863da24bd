package io.insightd.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The members of each request schema of openapi/openapi.json (every one is closed:
 * {@code additionalProperties: false}) and, for a member that is an object (or an array of
 * objects, {@code []}), its schema. The client's mapper ignores members a record lacks (so that a
 * member a later insightd adds to an answer does not break it); a request decoded from the
 * caller's JSON by that rule would lose a misspelt member, or the whole kit's object wrapped once
 * too often, unseen. {@link EvaluationRequest#fromJson} and {@link EvaluationRequest.Interaction#fromJson}
 * refuse such a member instead.
 */
public final class RequestMembers {
    private static final Map<String, Map<String, String>> SCHEMAS = Map.ofEntries(
            Map.entry("EvaluationRequest", Map.of("requestId", "", "operationCategory", "", "insights", "InsightRequest[]",
                    "subject", "Subject", "interaction", "Interaction", "transaction", "Transaction", "initiator", "Initiator")),
            Map.entry("InsightRequest", Map.of("type", "", "schemaVersion", "", "modelVersion", "")),
            Map.entry("Subject", Map.of("account", "", "device", "", "counterparty", "")),
            // summary's feature names are insightd's to judge (422 naming the feature).
            Map.entry("Interaction", Map.of("events", "InteractionEvent[]", "summary", "", "device", "DeviceFacts",
                    "source", "InteractionSource")),
            Map.entry("InteractionEvent", Map.of("t", "", "type", "", "field", "")),
            Map.entry("DeviceFacts", Map.of("activeCall", "", "callStartedBeforeSession", "", "screenSharing", "",
                    "remoteAccessApp", "")),
            Map.entry("InteractionSource", Map.of("kit", "", "version", "", "platform", "", "droppedEvents", "")),
            Map.entry("Transaction", Map.of("newCounterparty", "", "amountBand", "")),
            Map.entry("Initiator", Map.of("kind", "", "agent", "AgentFacts")),
            Map.entry("AgentFacts", Map.of("userRequested", "", "untrustedContext", "", "argumentsFromUntrustedContext", "",
                    "sideEffects", "")));

    private RequestMembers() {}

    /** The member names of each request schema, for tooling (clients/conformance/check_openapi.py compares them with openapi/). */
    public static Map<String, List<String>> schemas() {
        Map<String, List<String>> out = new java.util.TreeMap<>();
        SCHEMAS.forEach((schema, members) -> out.put(schema, members.keySet().stream().sorted().toList()));
        return out;
    }

    /** {@code json} as {@code type}, after its members are checked against {@code schema} (rooted at {@code path}). */
    static <T> T decode(String json, Class<T> type, String schema, String path) {
        try {
            JsonNode tree = Json.MAPPER.readTree(json);
            check(tree, schema, path);
            return Json.MAPPER.treeToValue(tree, type);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not a " + schema + ": " + e.getOriginalMessage(), e);
        }
    }

    /** Throws {@link UnknownMemberException} for the first member of {@code node} that {@code schema} lacks. */
    static void check(JsonNode node, String schema, String path) {
        if (schema.endsWith("[]")) {
            if (node.isArray()) {
                for (int i = 0; i < node.size(); i++) {
                    check(node.get(i), schema.substring(0, schema.length() - 2), path + "[" + i + "]");
                }
            }
            return;
        }
        if (!node.isObject()) {
            return; // another type: a type error the decoder or insightd names
        }
        Map<String, String> members = SCHEMAS.get(schema);
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> member = it.next();
            String at = path.isEmpty() ? member.getKey() : path + "." + member.getKey();
            String child = members.get(member.getKey());
            if (child == null) {
                List<String> declared = new ArrayList<>(members.keySet());
                declared.sort(null);
                throw new UnknownMemberException(at, schema, declared);
            }
            if (!child.isEmpty()) {
                check(member.getValue(), child, at);
            }
        }
    }
}
