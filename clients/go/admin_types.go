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

// ModelList is GET /admin/v1/models.
type ModelList struct {
	CurrentVersion *string `json:"currentVersion"`
	Versions       []struct {
		Version  string `json:"version"`
		Status   string `json:"status"`
		Current  bool   `json:"current"`
		Shadow   bool   `json:"shadow"`
		Trees    int64  `json:"trees"`
		Features int64  `json:"features"`
	} `json:"versions"`
}

// VelocityCounts is GET /admin/v1/velocity: this instance since it started.
type VelocityCounts struct {
	Scope     string     `json:"scope"`
	StartedAt *time.Time `json:"startedAt"`
	Rules     []struct {
		Rule  string  `json:"rule"`
		Mode  string  `json:"mode"`
		Count float64 `json:"count"`
	} `json:"rules"`
	ShadowPolicyDisagreements []struct {
		Rule         string         `json:"rule"`
		ShadowAction DecisionAction `json:"shadowAction"`
		Action       DecisionAction `json:"action"`
		Count        float64        `json:"count"`
	} `json:"shadowPolicyDisagreements"`
}

// InstanceHealth is GET /admin/v1/health: this instance since it started.
type InstanceHealth struct {
	Scope     string     `json:"scope"`
	StartedAt *time.Time `json:"startedAt"`
	Ready     bool       `json:"ready"`
	Velocity  string     `json:"velocity"`
	Store     struct {
		Reachable       bool     `json:"reachable"`
		WritesCommitted *float64 `json:"writesCommitted"`
		Commits         *float64 `json:"commits"`
		WriteFailures   *float64 `json:"writeFailures"`
		QueueDepth      *float64 `json:"queueDepth"`
	} `json:"store"`
}

// DecisionReport is GET /admin/v1/decisions: how callers acted on the decisions.
type DecisionReport struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Callers []struct {
		CallerID               string                          `json:"callerId"`
		Name                   *string                         `json:"name"`
		Environment            *Environment                    `json:"environment"`
		Actions                map[DecisionAction]ActionReport `json:"actions"`
		ProceededAgainstPolicy int64                           `json:"proceededAgainstPolicy"`
	} `json:"callers"`
}

// ActionReport counts one action's evaluations and their reports.
type ActionReport struct {
	Evaluations int64                       `json:"evaluations"`
	Reported    int64                       `json:"reported"`
	Proceeded   int64                       `json:"proceeded"`
	Statuses    map[ConsumptionStatus]int64 `json:"statuses"`
}

// ModelPerformanceQuery selects GET /admin/v1/model-performance (From, To: YYYY-MM-DD).
type ModelPerformanceQuery struct {
	From, To    string
	Environment Environment       // default: the admin key's own
	Category    OperationCategory // default: each category in its own row
}

// ModelPerformance is how each model version performs on the tenant's traffic.
type ModelPerformance struct {
	Environment  Environment           `json:"environment"`
	From         string                `json:"from"`
	To           string                `json:"to"`
	Category     *OperationCategory    `json:"category"`
	MaturityDays int64                 `json:"maturityDays"`
	MatureBefore time.Time             `json:"matureBefore"`
	Mature       bool                  `json:"mature"`
	Versions     []ModelPerformanceRow `json:"versions"`
}

// ValueCounts counts insights per value.
type ValueCounts struct {
	Unknown int64 `json:"unknown"`
	Medium  int64 `json:"medium"`
	High    int64 `json:"high"`
}

// Proportion is successes of sample with its 95 % Wilson interval (nil when sample is 0).
type Proportion struct {
	Value     *float64 `json:"value"`
	Successes int64    `json:"successes"`
	Sample    int64    `json:"sample"`
	Interval  *struct {
		Low  float64 `json:"low"`
		High float64 `json:"high"`
	} `json:"interval"`
}

// ModelPerformanceRow is one model version, in one role, on one category.
type ModelPerformanceRow struct {
	ModelVersion string            `json:"modelVersion"`
	Category     OperationCategory `json:"category"`
	Role         string            `json:"role"`
	Evaluations  int64             `json:"evaluations"`
	Values       ValueCounts       `json:"values"`
	Consumption  map[string]int64  `json:"consumption"`
	Labelled     struct {
		ConfirmedFraud      ValueCounts `json:"confirmedFraud"`
		ConfirmedLegitimate ValueCounts `json:"confirmedLegitimate"`
	} `json:"labelled"`
	Precision struct {
		MediumOrHigh Proportion `json:"mediumOrHigh"`
		High         Proportion `json:"high"`
	} `json:"precision"`
	Recall struct {
		MediumOrHigh Proportion `json:"mediumOrHigh"`
		High         Proportion `json:"high"`
	} `json:"recall"`
	MatureShare float64 `json:"matureShare"`
	PSI         *struct {
		Value  float64 `json:"value"`
		Sample int64   `json:"sample"`
	} `json:"psi"`
}
