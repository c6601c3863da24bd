package insight

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// The admin API (role admin): the callers of the admin's tenant, their rate limits and keys,
// and the instance's reports (docs/api.md, "Admin API").

func callerPath(callerID string, rest string) string {
	return "/admin/v1/callers/" + url.PathEscape(callerID) + rest
}

func (c *Client) get(ctx context.Context, path string, query url.Values, out interface{}, opts []CallOption) error {
	_, err := c.jsonCall(ctx, request{method: http.MethodGet, path: path, query: query, replaySafe: true}, nil, out, opts)
	return err
}

// Callers lists the callers of the admin's tenant (GET /admin/v1/callers).
func (c *Client) Callers(ctx context.Context, opts ...CallOption) ([]Caller, error) {
	var out struct {
		Callers []Caller `json:"callers"`
	}
	err := c.get(ctx, "/admin/v1/callers", nil, &out, opts)
	return out.Callers, err
}

// Caller reads one caller (GET /admin/v1/callers/{callerId}); ErrCallerNotFound for another
// tenant's.
func (c *Client) Caller(ctx context.Context, callerID string, opts ...CallOption) (*Caller, error) {
	var out Caller
	err := c.get(ctx, callerPath(callerID, ""), nil, &out, opts)
	return &out, err
}

// UpdateCaller changes a caller's rate, burst or training capture (PATCH
// /admin/v1/callers/{callerId}); it answers the caller as changed.
func (c *Client) UpdateCaller(ctx context.Context, callerID string, patch CallerPatch, opts ...CallOption) (*Caller, error) {
	var out Caller
	_, err := c.jsonCall(ctx, request{method: http.MethodPatch, path: callerPath(callerID, ""), replaySafe: true}, patch, &out, opts)
	return &out, err
}

// RateLimit reads a caller's rate-limit state (GET /admin/v1/callers/{callerId}/rate-limit).
func (c *Client) RateLimit(ctx context.Context, callerID string, opts ...CallOption) (*RateLimitState, error) {
	var out RateLimitState
	err := c.get(ctx, callerPath(callerID, "/rate-limit"), nil, &out, opts)
	return &out, err
}

// ResetRateLimit refills the caller's bucket, clears its penalty and forgives its overdue
// reports so far (POST /admin/v1/callers/{callerId}/rate-limit/reset).
func (c *Client) ResetRateLimit(ctx context.Context, callerID string, opts ...CallOption) (*RateLimitState, error) {
	var out RateLimitState
	_, err := c.jsonCall(ctx, request{method: http.MethodPost, path: callerPath(callerID, "/rate-limit/reset"), replaySafe: true}, nil, &out, opts)
	return &out, err
}

// RateLimits lists every caller of the tenant with its rate-limit state (GET
// /admin/v1/rate-limits).
func (c *Client) RateLimits(ctx context.Context, opts ...CallOption) ([]CallerRateLimit, error) {
	var out struct {
		Callers []CallerRateLimit `json:"callers"`
	}
	err := c.get(ctx, "/admin/v1/rate-limits", nil, &out, opts)
	return out.Callers, err
}

// CallerKeys lists a caller's keys, oldest first (GET /admin/v1/callers/{callerId}/keys).
func (c *Client) CallerKeys(ctx context.Context, callerID string, opts ...CallOption) ([]APIKeyInfo, error) {
	var out struct {
		Keys []APIKeyInfo `json:"keys"`
	}
	err := c.get(ctx, callerPath(callerID, "/keys"), nil, &out, opts)
	return out.Keys, err
}

// RevokeKey revokes one of a caller's keys (POST …/keys/{keyId}/revoke); revoking again
// changes nothing. The key id is the 16 hex digits after `ik_`.
func (c *Client) RevokeKey(ctx context.Context, callerID, keyID string, opts ...CallOption) (*APIKeyInfo, error) {
	var out APIKeyInfo
	_, err := c.jsonCall(ctx, request{method: http.MethodPost, path: callerPath(callerID, "/keys/"+url.PathEscape(keyID)+"/revoke"),
		replaySafe: true}, nil, &out, opts)
	return &out, err
}

// Models lists the model versions this instance loaded (GET /admin/v1/models).
func (c *Client) Models(ctx context.Context, opts ...CallOption) (*ModelList, error) {
	var out ModelList
	err := c.get(ctx, "/admin/v1/models", nil, &out, opts)
	return &out, err
}

// Velocity reads this instance's velocity rule hits and shadow policy disagreements
// (GET /admin/v1/velocity).
func (c *Client) Velocity(ctx context.Context, opts ...CallOption) (*VelocityCounts, error) {
	var out VelocityCounts
	err := c.get(ctx, "/admin/v1/velocity", nil, &out, opts)
	return &out, err
}

// Health reads this instance's readiness and store figures (GET /admin/v1/health).
func (c *Client) Health(ctx context.Context, opts ...CallOption) (*InstanceHealth, error) {
	var out InstanceHealth
	err := c.get(ctx, "/admin/v1/health", nil, &out, opts)
	return &out, err
}

// Decisions reports how each caller acted on its decisions over the last days (1–400; 0
// for the service's default of 7) (GET /admin/v1/decisions).
func (c *Client) Decisions(ctx context.Context, days int, opts ...CallOption) (*DecisionReport, error) {
	query := url.Values{}
	if days > 0 {
		query.Set("days", strconv.Itoa(days))
	}
	var out DecisionReport
	err := c.get(ctx, "/admin/v1/decisions", query, &out, opts)
	return &out, err
}

// ModelPerformance reports how each model version performs on the tenant's traffic
// (GET /admin/v1/model-performance).
func (c *Client) ModelPerformance(ctx context.Context, q ModelPerformanceQuery, opts ...CallOption) (*ModelPerformance, error) {
	query := url.Values{"from": {q.From}, "to": {q.To}}
	if q.Environment != "" {
		query.Set("environment", string(q.Environment))
	}
	if q.Category != "" {
		query.Set("category", string(q.Category))
	}
	var out ModelPerformance
	err := c.get(ctx, "/admin/v1/model-performance", query, &out, opts)
	return &out, err
}
