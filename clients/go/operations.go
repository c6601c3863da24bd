package insight

import (
	"net/http"
	"net/url"
	"strings"
)

// Operation is one operation of openapi/openapi.json this client calls: every call is made
// through this table, so the table is what the client does (the conformance check compares it
// with the document).
type Operation struct {
	ID     string // the document's operationId
	Method string
	Path   string // with {parameters}
	// ReplaySafe: sending it twice does no more than once, so it is retried after a transport
	// failure. An evaluation is not: it is retried only when it cannot have arrived.
	ReplaySafe bool
}

var (
	opCreateEvaluation     = Operation{"createEvaluation", http.MethodPost, "/v1/evaluations", false}
	opReportConsumption    = Operation{"reportConsumption", http.MethodPost, "/v1/evaluations/{eventId}/consumption", true}
	opSubmitLabels         = Operation{"submitLabels", http.MethodPost, "/v1/labels", true}
	opListInsights         = Operation{"listInsights", http.MethodGet, "/v1/insights", true}
	opGetSigningKeys       = Operation{"getSigningKeys", http.MethodGet, "/v1/signing-keys", true}
	opListReceiptHeads     = Operation{"listReceiptHeads", http.MethodGet, "/v1/receipts/heads", true}
	opSetAuthorization     = Operation{"setAuthorization", http.MethodPut, "/v1/authorization", true}
	opQueryAuthorization   = Operation{"queryAuthorization", http.MethodPost, "/v1/authorization/query", true}
	opSubjectTransparency  = Operation{"subjectTransparency", http.MethodPost, "/v1/subjects/transparency", true}
	opSubjectErasure       = Operation{"subjectErasure", http.MethodPost, "/v1/subjects/erasure", true}
	opListCallers          = Operation{"listCallers", http.MethodGet, "/admin/v1/callers", true}
	opGetCaller            = Operation{"getCaller", http.MethodGet, "/admin/v1/callers/{callerId}", true}
	opUpdateCallerQuota    = Operation{"updateCallerQuota", http.MethodPatch, "/admin/v1/callers/{callerId}", true}
	opGetCallerRateLimit   = Operation{"getCallerRateLimit", http.MethodGet, "/admin/v1/callers/{callerId}/rate-limit", true}
	opResetCallerRateLimit = Operation{"resetCallerRateLimit", http.MethodPost, "/admin/v1/callers/{callerId}/rate-limit/reset", true}
	opListRateLimits       = Operation{"listRateLimits", http.MethodGet, "/admin/v1/rate-limits", true}
	opListCallerKeys       = Operation{"listCallerKeys", http.MethodGet, "/admin/v1/callers/{callerId}/keys", true}
	opRevokeCallerKey      = Operation{"revokeCallerKey", http.MethodPost, "/admin/v1/callers/{callerId}/keys/{keyId}/revoke", true}
)

// Operations lists the operations this client calls.
var Operations = []Operation{opCreateEvaluation, opReportConsumption, opSubmitLabels, opListInsights, opGetSigningKeys,
	opListReceiptHeads, opSetAuthorization, opQueryAuthorization, opSubjectTransparency, opSubjectErasure, opListCallers,
	opGetCaller, opUpdateCallerQuota, opGetCallerRateLimit, opResetCallerRateLimit, opListRateLimits, opListCallerKeys,
	opRevokeCallerKey}

// request is the operation with its path parameters filled in, in order.
func (o Operation) request(params ...string) request {
	path := o.Path
	for _, p := range params {
		open := strings.IndexByte(path, '{')
		close := strings.IndexByte(path, '}')
		path = path[:open] + url.PathEscape(p) + path[close+1:]
	}
	return request{method: o.Method, path: path, replaySafe: o.ReplaySafe}
}
