package insight

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Evaluate asks for the insights of req (POST /v1/evaluations). The answer is verified
// before it is returned: its requestId must be the one sent, its insights those asked for, and
// (unless disabled) its Insight-Receipt must prove it; otherwise *UnexpectedResponseError or
// *ReceiptError. A refusal is an *APIError. The evaluation is sent again only when the request
// cannot have arrived (no connection was made), never after a 503, a 429 or a lost answer,
// unless the caller set the requestId: then it is retried like a read (insightd answers the
// retry from the first evaluation; Evaluation.Replayed says so). Options.DisableIdempotentEvaluations
// turns that off for an insightd older than the replay.
func (c *Client) Evaluate(ctx context.Context, req EvaluationRequest, opts ...CallOption) (*Evaluation, error) {
	call := opCreateEvaluation.request()
	// The caller's own requestId names one evaluation, so a service that replays by requestId
	// answers a retry with it; a generated one would not survive the caller's own retry.
	call.replaySafe = c.idempotentEvaluations && req.RequestID != ""
	if req.RequestID == "" {
		req.RequestID = randomToken("req-", 24)
	}
	var ev Evaluation
	resp, err := c.jsonCall(ctx, call, req, &ev, opts)
	if err != nil {
		return nil, err
	}
	if ev.RequestID != req.RequestID {
		return nil, &UnexpectedResponseError{Detail: fmt.Sprintf("the answer is to requestId %q, not %q", ev.RequestID, req.RequestID)}
	}
	if len(ev.Insights) != len(req.Insights) {
		return nil, &UnexpectedResponseError{Detail: fmt.Sprintf("%d insights answered for %d asked", len(ev.Insights), len(req.Insights))}
	}
	for i, asked := range req.Insights {
		if ev.Insights[i].Type != asked.Type {
			return nil, &UnexpectedResponseError{Detail: fmt.Sprintf("insight %d answers %s, not %s", i, ev.Insights[i].Type, asked.Type)}
		}
	}
	ev.Body, ev.Attempts = resp.body, resp.attempts
	ev.Replayed = resp.header.Get("Idempotent-Replayed") == "true"
	if c.verifier != nil {
		receipt, err := c.verifier.verify(ctx, resp.body, resp.header.Get("Insight-Receipt"))
		if err != nil {
			return nil, err
		}
		ev.Receipt = receipt
	}
	return &ev, nil
}

// ReportConsumption says what you did with an evaluation (mandatory for every evaluation, due
// by its ReportConsumptionBy). The same report again changes nothing, so it is retried after
// transport failures; a different one is ErrConsumptionConflict.
func (c *Client) ReportConsumption(ctx context.Context, eventID string, report ConsumptionReport, opts ...CallOption) error {
	_, err := c.jsonCall(ctx, opReportConsumption.request(eventID), report, nil, opts)
	return err
}

// MaxLabelsPerSubmission is the most labels one POST /v1/labels takes.
const MaxLabelsPerSubmission = 1000

// ErrBatchTooLarge is a label submission of no label or more than MaxLabelsPerSubmission,
// refused before anything is sent: split the batch.
var ErrBatchTooLarge = errors.New("insightd: a submission holds 1 to 1,000 labels")

// NewIdempotencyKey returns a fresh key for a label batch.
func NewIdempotencyKey() string { return randomToken("labels-", 24) }

// SubmitLabels sends up to 1,000 labels under idempotencyKey (POST /v1/labels, role labels):
// one result per label, in order. The same key with the same labels replays the first answer,
// so the batch is retried after transport failures; with other labels it is
// ErrIdempotencyKeyReused.
func (c *Client) SubmitLabels(ctx context.Context, labels []Label, idempotencyKey string, opts ...CallOption) (*LabelResults, error) {
	if len(labels) == 0 || len(labels) > MaxLabelsPerSubmission {
		return nil, fmt.Errorf("%w: %d labels", ErrBatchTooLarge, len(labels))
	}
	var out LabelResults
	req := opSubmitLabels.request()
	req.headers = http.Header{"Idempotency-Key": {idempotencyKey}}
	resp, err := c.jsonCall(ctx, req,
		map[string][]Label{"labels": labels}, &out, opts)
	if err != nil {
		return nil, err
	}
	if len(out.Results) != len(labels) {
		return nil, &UnexpectedResponseError{Detail: fmt.Sprintf("%d results for %d labels", len(out.Results), len(labels))}
	}
	out.Replayed = resp.header.Get("Idempotent-Replayed") == "true"
	return &out, nil
}

// SetAuthorization records a person's choice (PUT /v1/authorization): Denied switches insights
// off after the cooldown (DenialPending until then), Authorized switches them back on at once.
func (c *Client) SetAuthorization(ctx context.Context, subject AuthorizationSubject, status AuthorizationStatus, opts ...CallOption) (*AuthorizationState, error) {
	var out AuthorizationState
	body := struct {
		Subject AuthorizationSubject `json:"subject"`
		Status  AuthorizationStatus  `json:"status"`
	}{subject, status}
	_, err := c.jsonCall(ctx, opSetAuthorization.request(), body, &out, opts)
	return &out, err
}

// QueryAuthorization reads a person's choice (POST /v1/authorization/query).
func (c *Client) QueryAuthorization(ctx context.Context, subject AuthorizationSubject, opts ...CallOption) (*AuthorizationState, error) {
	var out AuthorizationState
	body := struct {
		Subject AuthorizationSubject `json:"subject"`
	}{subject}
	_, err := c.jsonCall(ctx, opQueryAuthorization.request(), body, &out, opts)
	return &out, err
}

// Catalog lists the insight types, schema versions, values and model versions served
// (GET /v1/insights).
func (c *Client) Catalog(ctx context.Context, opts ...CallOption) (*Catalog, error) {
	var out Catalog
	_, err := c.jsonCall(ctx, opListInsights.request(), nil, &out, opts)
	return &out, err
}

// SigningKeys fetches the service's JWKS (GET /v1/signing-keys, no credentials needed).
func (c *Client) SigningKeys(ctx context.Context, opts ...CallOption) (*KeySet, error) {
	resp, err := c.call(ctx, opGetSigningKeys.request(), opts)
	if err != nil {
		return nil, err
	}
	return ParseKeySet(resp.body)
}

// ReceiptHeads lists an instance's signed heads from sequence `from` (GET /v1/receipts/heads;
// instance "" for all, limit 0 for the service's default).
func (c *Client) ReceiptHeads(ctx context.Context, instance string, from int64, limit int, opts ...CallOption) (*ReceiptHeadList, error) {
	query := url.Values{}
	if instance != "" {
		query.Set("instance", instance)
	}
	if from > 0 {
		query.Set("from", strconv.FormatInt(from, 10))
	}
	if limit > 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	req := opListReceiptHeads.request()
	req.query = query
	var out ReceiptHeadList
	_, err := c.jsonCall(ctx, req, nil, &out, opts)
	return &out, err
}

// Transparency lists the evaluations of the caller's tenant and environment that carried one
// subject, newest first (POST /v1/subjects/transparency); pass Cursor for the next page.
func (c *Client) Transparency(ctx context.Context, query TransparencyQuery, opts ...CallOption) (*Transparency, error) {
	var out Transparency
	_, err := c.jsonCall(ctx, opSubjectTransparency.request(), query, &out, opts)
	return &out, err
}

// Erase unlinks a subject's identifiers in the admin's tenant (POST /v1/subjects/erasure, role
// admin). Erasing again answers zeros, so it is retried after transport failures.
func (c *Client) Erase(ctx context.Context, req ErasureRequest, opts ...CallOption) (*ErasureResult, error) {
	var out ErasureResult
	_, err := c.jsonCall(ctx, opSubjectErasure.request(), req, &out, opts)
	return &out, err
}
