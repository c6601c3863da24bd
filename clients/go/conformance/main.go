// The Go client's conformance driver (clients/conformance/README.md): `describe` prints the
// client's operations and enumerations; `run` executes clients/conformance/scenario.json
// against the daemon the environment names, through the client's public API only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	insight "github.com/insightd/insightd/clients/go"
)

func describe() {
	operations := map[string]string{}
	for _, op := range insight.Operations {
		operations[op.ID] = op.Method + " " + op.Path
	}
	strs := func(values interface{}) []string {
		data, _ := json.Marshal(values)
		var out []string
		_ = json.Unmarshal(data, &out)
		return out
	}
	enums := map[string][]string{
		"OperationCategory":                   strs(insight.OperationCategories),
		"InteractionEvent.type":               strs(insight.EventTypes),
		"InteractionEvent.field":              strs(insight.Fields),
		"InteractionSource.platform":          strs(insight.Platforms),
		"Transaction.amountBand":              strs(insight.AmountBands),
		"Environment":                         strs(insight.Environments),
		"InsightValue":                        strs(insight.Values),
		"InsightErrorCode":                    strs(insight.InsightErrorCodes),
		"ConsumptionStatus":                   strs(insight.ConsumptionStatuses),
		"LabelOutcome":                        strs(insight.LabelOutcomes),
		"FraudType":                           strs(insight.FraudTypes),
		"LabelResultStatus":                   strs(insight.LabelResultStatuses),
		"InsightCatalogEntry.type":            strs(insight.InsightTypes),
		"ModelVersion.status":                 strs(insight.ModelVersionStatuses),
		"Problem.code":                        strs(insight.ProblemCodes),
		"Problem.reason":                      strs(insight.RateLimitReasons),
		"Caller.roles":                        strs(insight.Roles),
		"RateLimitState.throttled.lastReason": strs(insight.ThrottleReasons),
		"AuthorizationChange.status":          strs(insight.AuthorizationChanges),
		"AuthorizationState.status":           strs(insight.AuthorizationStatuses),
		"TransparencyEntry.decision":          strs(insight.DecisionActions),
		"Initiator.kind":                      strs(insight.InitiatorKinds),
		"AgentFacts.untrustedContext":         strs(insight.UntrustedContexts),
		"AgentFacts.sideEffects":              strs(insight.SideEffects),
		"DecisionAction":                      strs(insight.DecisionActions),
	}
	out, _ := json.MarshalIndent(map[string]interface{}{"client": "go", "version": insight.Version, "operations": operations, "enums": enums,
		"requestMembers": insight.RequestMembers()}, "", " ")
	fmt.Println(string(out))
}

// Step is one step of the scenario; Expect is checked against what the step's action got.
type Step struct {
	ID                  string                 `json:"id"`
	Do                  string                 `json:"do"`
	Key                 string                 `json:"key"`
	Context             string                 `json:"context"`
	Override            string                 `json:"override"`
	Save                string                 `json:"save"`
	Via                 string                 `json:"via"`
	Verify              *bool                  `json:"verify"`
	Pin                 string                 `json:"pin"`
	UntilKidDiffersFrom string                 `json:"untilKidDiffersFrom"`
	RequestID           string                 `json:"requestId"`
	Evaluation          string                 `json:"evaluation"`
	Status              string                 `json:"status"`
	IdempotencyKey      string                 `json:"idempotencyKey"`
	Labels              []map[string]string    `json:"labels"`
	Repeat              int                    `json:"repeat"`
	Subject             insight.Subject        `json:"subject"`
	Caller              string                 `json:"caller"`
	Burst               int64                  `json:"burst"`
	Expect              map[string]interface{} `json:"expect"`
}

type scenario struct {
	Contexts map[string]json.RawMessage `json:"contexts"`
	Steps    []Step                     `json:"steps"`
}

// got is what an action produced.
type got struct {
	evaluation   *insight.Evaluation
	catalog      *insight.Catalog
	keys         *insight.KeySet
	recorded     bool
	labels       *insight.LabelResults
	auth         *insight.AuthorizationState
	transparency *insight.Transparency
	rateLimit    *insight.RateLimitState
	callerIDs    []string
	caller       *insight.Caller
	apiKeys      []insight.APIKeyInfo
	revokedKey   *insight.APIKeyInfo
	heads        *insight.ReceiptHeadList
	erasure      *insight.ErasureResult
}

type runner struct {
	scenario        scenario
	clients         map[string]*insight.Client
	saved           map[string]*insight.Evaluation
	idempotencyKeys map[string]string
	ctx             context.Context
}

func (r *runner) client(key, via string, verify bool) *insight.Client {
	return r.pinnedClient(key, via, verify, "")
}

// pinnedClient is a client that pins the daemon's own keys (never a proxy's) as pin says:
// "thumbprints" their kids, "keys" the JWKS itself, "" none.
func (r *runner) pinnedClient(key, via string, verify bool, pin string) *insight.Client {
	slot := fmt.Sprintf("%s|%s|%v|%s", key, via, verify, pin)
	if c := r.clients[slot]; c != nil {
		return c
	}
	url := os.Getenv("INSIGHT_URL")
	switch via {
	case "tampering":
		url = os.Getenv("INSIGHT_TAMPERING_URL")
	case "rekeying":
		url = os.Getenv("INSIGHT_REKEYING_URL")
	}
	opts := insight.Options{BaseURL: url, APIKey: os.Getenv("INSIGHT_KEY_" + strings.ToUpper(key)),
		Timeout: 10 * time.Second, DisableReceiptVerification: !verify}
	if pin != "" {
		keys, err := r.client("", "", true).SigningKeys(r.ctx)
		if err != nil {
			panic(err)
		}
		if pin == "thumbprints" {
			opts.PinnedKeyIDs = keys.KeyIDs()
		} else {
			opts.PinnedKeys = keys
		}
	}
	c, err := insight.New(opts)
	if err != nil {
		panic(err)
	}
	r.clients[slot] = c
	return c
}

// unique maps a scenario's name (an idempotency key, a requestId) to one value unique to the run:
// the same name sends the same value.
func (r *runner) unique(slot, name string) string {
	value, ok := r.idempotencyKeys[slot]
	if !ok {
		value = name + "-" + insight.NewIdempotencyKey()
		r.idempotencyKeys[slot] = value
	}
	return value
}

func callerID(name string) string { return os.Getenv("INSIGHT_CALLER_" + strings.ToUpper(name)) }

func (r *runner) act(s Step) (*got, error) {
	verify := s.Verify == nil || *s.Verify
	c := r.pinnedClient(s.Key, s.Via, verify, s.Pin)
	ctx := r.ctx
	switch s.Do {
	case "catalog":
		catalog, err := r.client("sandbox", "", true).Catalog(ctx)
		return &got{catalog: catalog}, err
	case "signingKeys":
		keys, err := r.client("", "", true).SigningKeys(ctx)
		return &got{keys: keys}, err
	case "evaluate":
		var req insight.EvaluationRequest
		if err := json.Unmarshal(r.scenario.Contexts[s.Context], &req); err != nil {
			return nil, err
		}
		var opts []insight.CallOption
		if s.Override != "" {
			opts = append(opts, insight.WithOverride(s.Override))
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			req.RequestID = ""
			if s.RequestID != "" {
				req.RequestID = r.unique("request:"+s.RequestID, s.RequestID)
			}
			ev, err := c.Evaluate(ctx, req, opts...)
			if err != nil {
				return nil, err
			}
			if s.UntilKidDiffersFrom == "" || ev.Receipt.KeyID != r.saved[s.UntilKidDiffersFrom].Receipt.KeyID || time.Now().After(deadline) {
				if s.Save != "" {
					r.saved[s.Save] = ev
				}
				return &got{evaluation: ev}, nil
			}
			time.Sleep(500 * time.Millisecond)
		}
	case "report":
		ev := r.saved[s.Evaluation]
		err := c.ReportConsumption(ctx, ev.EventID, insight.ConsumptionReport{Status: insight.ConsumptionStatus(s.Status),
			InsightIDsUsed: []string{ev.Insights[0].InsightID}})
		return &got{recorded: err == nil}, err
	case "label":
		var labels []insight.Label
		repeat := s.Repeat
		if repeat == 0 {
			repeat = 1
		}
		for i := 0; i < repeat; i++ {
			for _, item := range s.Labels {
				id := item["insightId"]
				if id == "" {
					id = r.saved[item["insightOf"]].Insights[0].InsightID
				}
				labels = append(labels, insight.Label{InsightID: id, Outcome: insight.LabelOutcome(item["outcome"]),
					FraudType: insight.FraudType(item["fraudType"]), DiscoveredAt: time.Now()})
			}
		}
		results, err := c.SubmitLabels(ctx, labels, r.unique(s.IdempotencyKey, s.IdempotencyKey))
		return &got{labels: results}, err
	case "authorize":
		state, err := c.SetAuthorization(ctx, insight.AuthorizationSubject{Account: s.Subject.Account, Device: s.Subject.Device},
			insight.AuthorizationStatus(s.Status))
		return &got{auth: state}, err
	case "queryAuthorization":
		state, err := c.QueryAuthorization(ctx, insight.AuthorizationSubject{Account: s.Subject.Account, Device: s.Subject.Device})
		return &got{auth: state}, err
	case "transparency":
		result, err := c.Transparency(ctx, insight.TransparencyQuery{Subject: s.Subject})
		if err != nil {
			return nil, err
		}
		return &got{transparency: result, auth: result.Authorization}, nil
	case "erase":
		result, err := c.Erase(ctx, insight.ErasureRequest{Subject: s.Subject})
		return &got{erasure: result}, err
	case "rateLimit":
		state, err := c.RateLimit(ctx, callerID(s.Caller))
		return &got{rateLimit: state}, err
	case "resetRateLimit":
		state, err := c.ResetRateLimit(ctx, callerID(s.Caller))
		return &got{rateLimit: state}, err
	case "rateLimits":
		list, err := c.RateLimits(ctx)
		g := &got{}
		for _, entry := range list {
			g.callerIDs = append(g.callerIDs, entry.Caller.CallerID)
		}
		return g, err
	case "callers":
		list, err := c.Callers(ctx)
		g := &got{}
		for _, caller := range list {
			g.callerIDs = append(g.callerIDs, caller.CallerID)
		}
		return g, err
	case "caller":
		id := callerID(s.Caller)
		if id == "" {
			id = s.Caller
		}
		caller, err := c.Caller(ctx, id)
		return &got{caller: caller}, err
	case "updateQuota":
		burst := s.Burst
		caller, err := c.UpdateCaller(ctx, callerID(s.Caller), insight.CallerPatch{Burst: &burst})
		return &got{caller: caller}, err
	case "keys":
		keys, err := c.CallerKeys(ctx, callerID(s.Caller))
		return &got{apiKeys: keys}, err
	case "revokeKey":
		keys, err := c.CallerKeys(ctx, callerID(s.Caller))
		if err != nil {
			return nil, err
		}
		if len(keys) != 1 {
			return nil, fmt.Errorf("the caller has %d keys, not 1", len(keys))
		}
		revoked, err := c.RevokeKey(ctx, callerID(s.Caller), keys[0].KeyID)
		return &got{revokedKey: revoked}, err
	case "rotateSigningKey":
		cmd := exec.Command("sh", "-c", os.Getenv("INSIGHT_ROTATE_COMMAND"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return &got{}, cmd.Run()
	case "receiptHeads":
		receipt := r.saved[s.Evaluation].Receipt
		heads, err := c.ReceiptHeads(ctx, receipt.Instance, receipt.Sequence, 1)
		return &got{heads: heads}, err
	}
	return nil, fmt.Errorf("unknown action %q", s.Do)
}

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		panic(failure(fmt.Sprintf(format, args...)))
	}
}

type failure string

func num(v interface{}) int { f, _ := v.(float64); return int(f) }

func (r *runner) expect(s Step, g *got, err error) {
	expect := s.Expect
	if want, ok := expect["problem"].(map[string]interface{}); ok {
		var apiErr *insight.APIError
		check(errors.As(err, &apiErr), "expected problem %v, got %v", want["code"], err)
		check(errors.Is(err, &insight.APIError{Code: insight.Code(want["code"].(string))}), "expected problem %v, got %s", want["code"], apiErr.Code)
		check(apiErr.Status == num(want["status"]), "expected status %v, got %d", want["status"], apiErr.Status)
		if want["retryAfter"] == true {
			check(apiErr.RetryAfter > 0, "no RetryAfter")
		}
		if field, ok := want["field"].(string); ok {
			check(apiErr.Field == field, "field %q", apiErr.Field)
		}
		if reason, ok := want["reason"].(string); ok {
			check(string(apiErr.Reason) == reason, "reason %q", apiErr.Reason)
		}
		if attempts, ok := expect["attempts"]; ok {
			check(apiErr.Attempts == num(attempts), "%d attempts", apiErr.Attempts)
		}
		return
	}
	if kind, ok := expect["clientError"].(string); ok {
		var receiptErr *insight.ReceiptError
		switch kind {
		case "receiptInvalid":
			check(errors.As(err, &receiptErr), "expected a ReceiptError, got %v", err)
		case "batchTooLarge":
			check(errors.Is(err, insight.ErrBatchTooLarge), "expected ErrBatchTooLarge, got %v", err)
		case "unknownMember":
			// The driver decodes the context with json.Unmarshal, as a backend decodes the kit's object.
			var memberErr *insight.UnknownMemberError
			check(errors.As(err, &memberErr), "expected an UnknownMemberError, got %v", err)
			if path, ok := expect["path"].(string); ok {
				check(memberErr.Path == path, "expected path %s, got %s", path, memberErr.Path)
			}
		default:
			check(false, "unknown client error %s", kind)
		}
		return
	}
	if err != nil {
		panic(err)
	}
	if ev := g.evaluation; ev != nil {
		verified := true
		if v, ok := expect["verified"].(bool); ok {
			verified = v
		}
		check((ev.Receipt != nil) == verified, "verified is %v, expected %v", ev.Receipt != nil, verified)
		result := ev.Insights[0]
		if env, ok := expect["environment"].(string); ok {
			check(string(ev.Environment) == env, "environment %s", ev.Environment)
		}
		check(ev.Tenant == os.Getenv("INSIGHT_TENANT"), "tenant %s", ev.Tenant)
		if n, ok := expect["insights"]; ok {
			check(len(ev.Insights) == num(n), "%d insights", len(ev.Insights))
		}
		if value, ok := expect["value"].(string); ok {
			check(string(result.Outcome.Value) == value, "value %s, expected %s", result.Outcome.Value, value)
		}
		if reason, ok := expect["reason"].(string); ok {
			check(strings.Contains(","+strings.Join(result.Reasons, ",")+",", ","+reason+","), "reasons %v", result.Reasons)
		}
		if code, ok := expect["insightError"].(string); ok {
			check(result.Outcome.Error != nil && string(result.Outcome.Error.Code) == code, "insight outcome %+v", result.Outcome)
		}
		if action, ok := expect["decision"].(string); ok {
			check(string(ev.Decision.Action) == action, "decision %s", ev.Decision.Action)
		}
		if from, ok := expect["kidDiffersFrom"].(string); ok {
			check(ev.Receipt.KeyID != r.saved[from].Receipt.KeyID, "the signing key did not change")
		}
		if attempts, ok := expect["attempts"]; ok {
			check(ev.Attempts == num(attempts), "%d attempts", ev.Attempts)
		}
		if replayed, ok := expect["replayed"].(bool); ok {
			check(ev.Replayed == replayed, "replayed is %v", ev.Replayed)
		}
		if name, ok := expect["sameEventAs"].(string); ok {
			check(ev.EventID == r.saved[name].EventID, "another eventId")
		}
	}
	if types, ok := expect["insightTypes"].([]interface{}); ok {
		have := map[string]bool{}
		for _, entry := range g.catalog.Insights {
			have[entry.Type] = true
		}
		for _, t := range types {
			check(have[t.(string)], "catalog lacks %v", t)
		}
	}
	if n, ok := expect["minKeys"]; ok {
		check(len(g.keys.KeyIDs()) >= num(n), "%d keys", len(g.keys.KeyIDs()))
	}
	if _, ok := expect["recorded"]; ok {
		check(g.recorded, "not recorded")
	}
	if want, ok := expect["results"].([]interface{}); ok {
		var statuses []string
		accepted := 0
		for _, result := range g.labels.Results {
			statuses = append(statuses, string(result.Status))
			if result.Status == insight.LabelAccepted {
				accepted++
			}
		}
		check(fmt.Sprint(statuses) == fmt.Sprint(want), "label results %v", statuses)
		check(g.labels.Summary.Accepted == accepted, "summary %+v", g.labels.Summary)
	}
	if replayed, ok := expect["replayed"].(bool); ok && g.labels != nil {
		check(g.labels.Replayed == replayed, "replayed is %v", g.labels.Replayed)
	}
	if status, ok := expect["authorization"].(string); ok {
		check(g.auth != nil && string(g.auth.Status) == status, "authorization %+v", g.auth)
	}
	if n, ok := expect["minEvaluations"]; ok {
		check(len(g.transparency.Evaluations) >= num(n), "%d evaluations", len(g.transparency.Evaluations))
	}
	if n, ok := expect["erasedEvaluations"]; ok {
		e := g.erasure
		check(e.Evaluations == int64(num(n)) && e.Authorizations == int64(num(expect["erasedAuthorizations"])),
			"erased %d evaluations, %d authorizations", e.Evaluations, e.Authorizations)
		check(e.Tenant == os.Getenv("INSIGHT_TENANT") && e.HashKeys >= 1, "erasure %+v", e)
	}
	if n, ok := expect["minThrottled"]; ok {
		check(g.rateLimit.Throttled.Count >= int64(num(n)), "throttled %d", g.rateLimit.Throttled.Count)
	}
	if name, ok := expect["includesCaller"].(string); ok {
		check(strings.Contains(" "+strings.Join(g.callerIDs, " ")+" ", " "+callerID(name)+" "), "caller not listed")
	}
	if name, ok := expect["caller"].(string); ok {
		owner := ""
		if g.caller != nil {
			owner = g.caller.CallerID
		} else if g.rateLimit != nil {
			owner = g.rateLimit.CallerID
		}
		check(owner == callerID(name), "caller %s", owner)
	}
	if env, ok := expect["environment"].(string); ok && g.caller != nil {
		check(string(g.caller.Environment) == env, "environment %s", g.caller.Environment)
	}
	if burst, ok := expect["burst"]; ok {
		check(g.caller.Burst == int64(num(burst)), "burst %d", g.caller.Burst)
	}
	if n, ok := expect["keys"]; ok {
		revoked := 0
		for _, key := range g.apiKeys {
			if key.RevokedAt != nil {
				revoked++
			}
		}
		check(len(g.apiKeys) == num(n) && revoked == num(expect["revoked"]), "%d keys, %d revoked", len(g.apiKeys), revoked)
	}
	if _, ok := expect["revoked"]; ok && g.revokedKey != nil {
		check(g.revokedKey.RevokedAt != nil, "revokedAt is null")
	}
	if name, ok := expect["includesHeadOf"].(string); ok {
		head, listed := r.saved[name].Receipt.Head, false
		for _, h := range g.heads.Heads {
			listed = listed || h.Head == head
		}
		check(listed, "the receipt's head is not listed")
	}
}

func (r *runner) step(s Step) (err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			err = fmt.Errorf("%v", recovered)
		}
	}()
	g, actErr := r.act(s)
	r.expect(s, g, actErr)
	return nil
}

func run() bool {
	data, err := os.ReadFile(os.Getenv("INSIGHT_SCENARIO"))
	if err != nil {
		fmt.Println(err)
		return false
	}
	r := &runner{clients: map[string]*insight.Client{}, saved: map[string]*insight.Evaluation{}, idempotencyKeys: map[string]string{},
		ctx: context.Background()}
	if err := json.Unmarshal(data, &r.scenario); err != nil {
		fmt.Println(err)
		return false
	}
	passed, failed := 0, 0
	for _, s := range r.scenario.Steps {
		if err := r.step(s); err != nil {
			failed++
			fmt.Printf("FAIL  %s: %v\n", s.ID, err)
		} else {
			passed++
			fmt.Printf("ok    %s\n", s.ID)
		}
	}
	fmt.Printf("go: %d passed, %d failed\n", passed, failed)
	return failed == 0
}

func main() {
	command := ""
	if len(os.Args) > 1 {
		command = os.Args[1]
	}
	switch command {
	case "describe":
		describe()
	case "run":
		if !run() {
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: conformance describe|run")
		os.Exit(2)
	}
}
