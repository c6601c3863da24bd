package insight

import "time"

// Role is what a key may do.
type Role string

const (
	RoleEvaluate Role = "evaluate"
	RoleLabels   Role = "labels"
	RoleAdmin    Role = "admin"
)

// Roles lists the roles this client version knows.
var Roles = []Role{RoleEvaluate, RoleLabels, RoleAdmin}

// Caller is a registered caller of the admin's tenant.
type Caller struct {
	CallerID        string      `json:"callerId"`
	Name            string      `json:"name"`
	Tenant          string      `json:"tenant"`
	Environment     Environment `json:"environment"`
	Roles           []Role      `json:"roles"`
	Rate            float64     `json:"rate"`
	Burst           int64       `json:"burst"`
	CreatedAt       time.Time   `json:"createdAt"`
	TrainingCapture bool        `json:"trainingCapture"`
}

// CallerPatch changes a caller's quota or training capture (at least one member).
type CallerPatch struct {
	Rate            *float64 `json:"rate,omitempty"`
	Burst           *int64   `json:"burst,omitempty"`
	TrainingCapture *bool    `json:"trainingCapture,omitempty"`
}

// RateLimitState is a caller's rate-limit state now (docs/rate-limits.md).
type RateLimitState struct {
	CallerID    string      `json:"callerId"`
	Environment Environment `json:"environment"`
	Policy      struct {
		Rate                    float64 `json:"rate"`
		Burst                   int64   `json:"burst"`
		OverdueAllowanceShare   float64 `json:"overdueAllowanceShare"`
		OverdueAllowanceMinimum int64   `json:"overdueAllowanceMinimum"`
		FloorShare              float64 `json:"floorShare"`
		RecoverySeconds         int64   `json:"recoverySeconds"`
	} `json:"policy"`
	Penalty struct {
		Step    int64   `json:"step"`
		MaxStep int64   `json:"maxStep"`
		Factor  float64 `json:"factor"`
		Why     string  `json:"why"`
	} `json:"penalty"`
	EffectiveRate  float64 `json:"effectiveRate"`
	EffectiveBurst int64   `json:"effectiveBurst"`
	Tokens         int64   `json:"tokens"`
	Window         struct {
		Seconds          int64      `json:"seconds"`
		Evaluations      int64      `json:"evaluations"`
		OnTime           int64      `json:"onTime"`
		Late             int64      `json:"late"`
		Overdue          int64      `json:"overdue"`
		Pending          int64      `json:"pending"`
		OverdueAllowance int64      `json:"overdueAllowance"`
		CountedAt        *time.Time `json:"countedAt"`
	} `json:"window"`
	Throttled struct {
		Count           int64            `json:"count"`
		LastThrottledAt *time.Time       `json:"lastThrottledAt"`
		LastReason      *RateLimitReason `json:"lastReason"`
	} `json:"throttled"`
}

// CallerRateLimit is one caller with its rate-limit state (GET /admin/v1/rate-limits).
type CallerRateLimit struct {
	Caller    Caller         `json:"caller"`
	RateLimit RateLimitState `json:"rateLimit"`
}

// APIKeyInfo is a caller's key: its id and dates, never the secret.
type APIKeyInfo struct {
	KeyID     string     `json:"keyId"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt"`
}
