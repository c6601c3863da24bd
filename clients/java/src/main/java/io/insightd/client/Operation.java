package io.insightd.client;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * The operations of openapi/openapi.json this client calls. Every call is made through this
 * table, so the table is what the client does (the conformance check compares it with the
 * document). {@code replaySafe}: sending it twice does no more than once, so it is retried; an
 * evaluation is not, and is sent again only when it cannot have reached the service.
 */
public enum Operation {
    CREATE_EVALUATION("createEvaluation", "POST", "/v1/evaluations", false),
    REPORT_CONSUMPTION("reportConsumption", "POST", "/v1/evaluations/{eventId}/consumption", true),
    SUBMIT_LABELS("submitLabels", "POST", "/v1/labels", true),
    LIST_INSIGHTS("listInsights", "GET", "/v1/insights", true),
    GET_SIGNING_KEYS("getSigningKeys", "GET", "/v1/signing-keys", true),
    LIST_RECEIPT_HEADS("listReceiptHeads", "GET", "/v1/receipts/heads", true),
    SET_AUTHORIZATION("setAuthorization", "PUT", "/v1/authorization", true),
    QUERY_AUTHORIZATION("queryAuthorization", "POST", "/v1/authorization/query", true),
    SUBJECT_TRANSPARENCY("subjectTransparency", "POST", "/v1/subjects/transparency", true),
    SUBJECT_ERASURE("subjectErasure", "POST", "/v1/subjects/erasure", true),
    LIST_CALLERS("listCallers", "GET", "/admin/v1/callers", true),
    GET_CALLER("getCaller", "GET", "/admin/v1/callers/{callerId}", true),
    UPDATE_CALLER_QUOTA("updateCallerQuota", "PATCH", "/admin/v1/callers/{callerId}", true),
    GET_CALLER_RATE_LIMIT("getCallerRateLimit", "GET", "/admin/v1/callers/{callerId}/rate-limit", true),
    RESET_CALLER_RATE_LIMIT("resetCallerRateLimit", "POST", "/admin/v1/callers/{callerId}/rate-limit/reset", true),
    LIST_RATE_LIMITS("listRateLimits", "GET", "/admin/v1/rate-limits", true),
    LIST_CALLER_KEYS("listCallerKeys", "GET", "/admin/v1/callers/{callerId}/keys", true),
    REVOKE_CALLER_KEY("revokeCallerKey", "POST", "/admin/v1/callers/{callerId}/keys/{keyId}/revoke", true);

    private final String id;
    private final String method;
    private final String path;
    private final boolean replaySafe;

    Operation(String id, String method, String path, boolean replaySafe) {
        this.id = id;
        this.method = method;
        this.path = path;
        this.replaySafe = replaySafe;
    }

    /** The document's operationId. */
    public String id() { return id; }

    public String method() { return method; }

    /** The path, with its {parameters}. */
    public String path() { return path; }

    public boolean replaySafe() { return replaySafe; }

    /** The path with its parameters filled in, in order, each percent-encoded. */
    String path(String... parameters) {
        String out = path;
        for (String parameter : parameters) {
            int open = out.indexOf('{'), close = out.indexOf('}');
            out = out.substring(0, open) + URLEncoder.encode(parameter, StandardCharsets.UTF_8).replace("+", "%20")
                    + out.substring(close + 1);
        }
        return out;
    }
}
