package insight

import "context"

// The admin API (role admin): the callers of the admin's tenant, their rate limits and keys
// (docs/api.md, "Admin API"). The instance's reports (decisions, model performance, models,
// velocity, health) are the admin console's and not part of this client.

func (c *Client) get(ctx context.Context, req request, out interface{}, opts []CallOption) error {
	_, err := c.jsonCall(ctx, req, nil, out, opts)
	return err
}

// Callers lists the callers of the admin's tenant (GET /admin/v1/callers).
func (c *Client) Callers(ctx context.Context, opts ...CallOption) ([]Caller, error) {
	var out struct {
		Callers []Caller `json:"callers"`
	}
	err := c.get(ctx, opListCallers.request(), &out, opts)
	return out.Callers, err
}

// Caller reads one caller (GET /admin/v1/callers/{callerId}); ErrCallerNotFound for another
// tenant's.
func (c *Client) Caller(ctx context.Context, callerID string, opts ...CallOption) (*Caller, error) {
	var out Caller
	err := c.get(ctx, opGetCaller.request(callerID), &out, opts)
	return &out, err
}

// UpdateCaller changes a caller's rate, burst or training capture (PATCH
// /admin/v1/callers/{callerId}); it answers the caller as changed.
func (c *Client) UpdateCaller(ctx context.Context, callerID string, patch CallerPatch, opts ...CallOption) (*Caller, error) {
	var out Caller
	_, err := c.jsonCall(ctx, opUpdateCallerQuota.request(callerID), patch, &out, opts)
	return &out, err
}

// RateLimit reads a caller's rate-limit state (GET /admin/v1/callers/{callerId}/rate-limit).
func (c *Client) RateLimit(ctx context.Context, callerID string, opts ...CallOption) (*RateLimitState, error) {
	var out RateLimitState
	err := c.get(ctx, opGetCallerRateLimit.request(callerID), &out, opts)
	return &out, err
}

// ResetRateLimit clears the caller's penalty and forgives its overdue reports so far; its bucket
// is not refilled (POST /admin/v1/callers/{callerId}/rate-limit/reset).
func (c *Client) ResetRateLimit(ctx context.Context, callerID string, opts ...CallOption) (*RateLimitState, error) {
	var out RateLimitState
	_, err := c.jsonCall(ctx, opResetCallerRateLimit.request(callerID), nil, &out, opts)
	return &out, err
}

// RateLimits lists every caller of the tenant with its rate-limit state (GET
// /admin/v1/rate-limits).
func (c *Client) RateLimits(ctx context.Context, opts ...CallOption) ([]CallerRateLimit, error) {
	var out struct {
		Callers []CallerRateLimit `json:"callers"`
	}
	err := c.get(ctx, opListRateLimits.request(), &out, opts)
	return out.Callers, err
}

// CallerKeys lists a caller's keys, oldest first (GET /admin/v1/callers/{callerId}/keys).
func (c *Client) CallerKeys(ctx context.Context, callerID string, opts ...CallOption) ([]APIKeyInfo, error) {
	var out struct {
		Keys []APIKeyInfo `json:"keys"`
	}
	err := c.get(ctx, opListCallerKeys.request(callerID), &out, opts)
	return out.Keys, err
}

// RevokeKey revokes one of a caller's keys (POST …/keys/{keyId}/revoke); revoking again
// changes nothing. The key id is the 16 hex digits after `ik_`.
func (c *Client) RevokeKey(ctx context.Context, callerID, keyID string, opts ...CallOption) (*APIKeyInfo, error) {
	var out APIKeyInfo
	_, err := c.jsonCall(ctx, opRevokeCallerKey.request(callerID, keyID), nil, &out, opts)
	return &out, err
}
