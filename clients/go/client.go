package insight

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// RetryPolicy bounds what the client retries on its own. Only what cannot do a thing twice is
// retried. An idempotent request (a consumption report, labels with their Idempotency-Key, a
// read, the authorization switch, an admin change) is sent again after a transport failure
// and after a 503 (waiting its Retry-After). A 429 is not retried: the caller's quota is the
// caller's to spend. An evaluation is sent again only when it
// cannot have reached the service (no connection was made): once it may have arrived, a
// second one would be an evaluation the caller did not ask for.
type RetryPolicy struct {
	MaxAttempts         int           // attempts in all, at least 1
	MaxTotalDelay       time.Duration // waiting between attempts, in all
	TransportRetryDelay time.Duration // the first wait after a transport failure, doubling; 0: none
}

// DefaultRetryPolicy is three attempts within ten seconds of waiting.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 3, MaxTotalDelay: 10 * time.Second, TransportRetryDelay: 250 * time.Millisecond}

// NoRetries makes one attempt.
var NoRetries = RetryPolicy{MaxAttempts: 1}

// Options configure a Client. BaseURL and APIKey are required.
type Options struct {
	BaseURL string // e.g. http://127.0.0.1:8080
	APIKey  string
	// HTTPClient sends the requests; http.DefaultClient's transport when nil.
	HTTPClient *http.Client
	// Timeout bounds each attempt (10 s when zero); a context's deadline bounds the whole call.
	Timeout time.Duration
	// Retry is DefaultRetryPolicy when nil.
	Retry *RetryPolicy
	// DisableReceiptVerification skips verifying answers' Insight-Receipt (a service that does
	// not prove its answers). Verification is on by default.
	DisableReceiptVerification bool
	// PinnedKeys (ParseKeySet of the JWKS insightd's operator hands out) and PinnedKeyIDs (the
	// keys' RFC 7638 thumbprints: their kids) are the keys trusted to sign receipts. Without
	// them the client trusts whatever key set BaseURL serves, so a receipt proves the answer
	// only as far as TLS to insightd does; with them, a head signed by any other key fails
	// with a *ReceiptError ("… is not pinned"), even when BaseURL's JWKS lists it. Pinned keys
	// verify without a fetch; pinned ids are fetched. Pin the next key before a rotation
	// (docs/operations.md, "Signing keys"). AllowUnpinnedKeys also accepts other fetched keys
	// (while rolling pins out: Receipt.KeyID says which key signed).
	PinnedKeys        *KeySet
	PinnedKeyIDs      []string
	AllowUnpinnedKeys bool
	// ExpectedTenant and ExpectedEnvironment, when set, are what every answer must name;
	// otherwise the first verified answer's tenant and environment are expected of the rest.
	ExpectedTenant      string
	ExpectedEnvironment Environment
	// DisableIdempotentEvaluations is for an insightd older than the replay of an evaluation
	// sent again with the same requestId (docs/api.md, "Retries: requestId"). By default an
	// evaluation whose RequestID the caller set is retried like a read, since insightd answers
	// the retry from the first evaluation; one whose requestId the client generated never is:
	// the caller could not find it again.
	DisableIdempotentEvaluations bool
}

// Client calls insightd. It is safe for concurrent use; create one per base URL and key.
type Client struct {
	base     *url.URL
	apiKey   string
	http     *http.Client
	timeout  time.Duration
	retry    RetryPolicy
	verifier *receiptVerifier // nil when verification is disabled
	// idempotentEvaluations: see Options.DisableIdempotentEvaluations.
	idempotentEvaluations bool
}

// New returns a client for opts.BaseURL with opts.APIKey.
func New(opts Options) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(opts.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("insightd: base URL %q is not an http(s) URL", opts.BaseURL)
	}
	c := &Client{base: base, apiKey: opts.APIKey, http: opts.HTTPClient, timeout: opts.Timeout, retry: DefaultRetryPolicy,
		idempotentEvaluations: !opts.DisableIdempotentEvaluations}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.timeout <= 0 {
		c.timeout = 10 * time.Second
	}
	if opts.Retry != nil {
		c.retry = *opts.Retry
	}
	if c.retry.MaxAttempts < 1 {
		c.retry.MaxAttempts = 1
	}
	if !opts.DisableReceiptVerification {
		pins, err := newKeyPins(opts)
		if err != nil {
			return nil, err
		}
		c.verifier = &receiptVerifier{client: c, newest: map[string]*Receipt{},
			tenant: opts.ExpectedTenant, environment: opts.ExpectedEnvironment, pins: pins, keys: pins.apply(nil)}
	}
	return c, nil
}

// CallOption changes one call: WithOverride, WithHeader, WithTimeout, WithRetry.
type CallOption func(*callOptions)

type callOptions struct {
	headers http.Header
	timeout time.Duration
	retry   *RetryPolicy
}

// WithOverride sends Insight-Override (sandbox keys only) to force an outcome, e.g.
// "isLikelyBeingCoached=high" or "evaluation=error:denied" (docs/api.md).
func WithOverride(value string) CallOption { return WithHeader("Insight-Override", value) }

// WithHeader adds a header; the headers the client owns (Authorization, Content-Type,
// Idempotency-Key, …) are refused when the call is made.
func WithHeader(name, value string) CallOption {
	return func(o *callOptions) {
		if o.headers == nil {
			o.headers = http.Header{}
		}
		o.headers.Add(name, value)
	}
}

// WithTimeout bounds each attempt of this call.
func WithTimeout(d time.Duration) CallOption { return func(o *callOptions) { o.timeout = d } }

// WithRetry replaces the client's retry policy for this call.
func WithRetry(p RetryPolicy) CallOption { return func(o *callOptions) { o.retry = &p } }

var ownedHeaders = map[string]bool{"Authorization": true, "Content-Type": true, "Content-Length": true, "Accept": true,
	"Idempotency-Key": true, "Host": true, "Connection": true, "Transfer-Encoding": true, "Expect": true, "If-None-Match": true}

// request is one API call as the client sends it.
type request struct {
	method, path string
	query        url.Values
	body         []byte
	headers      http.Header
	// replaySafe: the request may be sent again after a transport failure (doing it twice
	// changes nothing). An evaluation is not: it is retried only when it cannot have arrived.
	replaySafe bool
	auth       bool
}

type response struct {
	attempts int
	status   int
	header   http.Header
	body     []byte
}

// call sends req under the retry policy and returns a 2xx or 304 response, or the error.
func (c *Client) call(ctx context.Context, req request, opts []CallOption) (*response, error) {
	var o callOptions
	for _, apply := range opts {
		apply(&o)
	}
	for name, values := range o.headers {
		canonical := http.CanonicalHeaderKey(name)
		if ownedHeaders[canonical] {
			return nil, fmt.Errorf("insightd: header %s is set by the client", canonical)
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return nil, fmt.Errorf("insightd: header %s has a control character", canonical)
			}
		}
		if req.headers == nil {
			req.headers = http.Header{}
		}
		req.headers[canonical] = values
	}
	policy, timeout := c.retry, c.timeout
	if o.retry != nil {
		policy = *o.retry
	}
	if o.timeout > 0 {
		timeout = o.timeout
	}
	var waited time.Duration
	transportDelay := policy.TransportRetryDelay
	for attempt := 1; ; attempt++ {
		resp, err := c.attempt(ctx, req, timeout)
		if err == nil && (resp.status < 300 || resp.status == http.StatusNotModified) {
			resp.attempts = attempt
			return resp, nil
		}
		var wait time.Duration
		if err == nil {
			err = problemFrom(resp.status, resp.header.Get, resp.body)
			if apiErr, ok := err.(*APIError); ok {
				apiErr.Attempts = attempt
				if req.replaySafe && apiErr.Status == 503 {
					wait = apiErr.RetryAfter
					if wait == 0 {
						wait, transportDelay = transportDelay, transportDelay*2
					}
				}
			}
		} else if te, ok := err.(*TransportError); ok {
			te.Attempts = attempt
			if transportDelay > 0 && (req.replaySafe || !te.MayHaveArrived) {
				wait, transportDelay = transportDelay, transportDelay*2
			}
		}
		if wait == 0 || attempt >= policy.MaxAttempts || waited+wait > policy.MaxTotalDelay {
			return nil, err
		}
		waited += wait
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, &TransportError{Err: ctx.Err(), MayHaveArrived: true, Attempts: attempt}
		}
	}
}

func (c *Client) attempt(ctx context.Context, req request, timeout time.Duration) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target := *c.base
	target.Path = c.base.Path + req.path
	target.RawQuery = req.query.Encode()
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.method, target.String(), body)
	if err != nil {
		return nil, err
	}
	for name, values := range req.headers {
		httpReq.Header[name] = values
	}
	if req.auth {
		httpReq.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	if req.body != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	httpReq.Header.Set("Accept", "application/json")
	httpReq.Header.Set("User-Agent", "insightd-go/"+Version)
	httpResp, err := c.http.Do(httpReq)
	if err != nil {
		return nil, &TransportError{Err: err, MayHaveArrived: !beforeSending(err)}
	}
	defer httpResp.Body.Close()
	data, err := io.ReadAll(httpResp.Body)
	if err != nil {
		return nil, &TransportError{Err: err, MayHaveArrived: true}
	}
	return &response{status: httpResp.StatusCode, header: httpResp.Header, body: data}, nil
}

// beforeSending says whether a transport error happened before any byte of the request left:
// the connection could not be made (refused, unreachable, DNS, connect timeout).
func beforeSending(err error) bool {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr)
}

// decode reads a JSON answer into out.
func decode(resp *response, out interface{}) error {
	if err := json.Unmarshal(resp.body, out); err != nil {
		return &UnexpectedResponseError{Detail: "the answer is not the JSON the API documents: " + err.Error()}
	}
	return nil
}

func (c *Client) jsonCall(ctx context.Context, req request, in, out interface{}, opts []CallOption) (*response, error) {
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		req.body = data
	}
	req.auth = true
	resp, err := c.call(ctx, req, opts)
	if err != nil || out == nil {
		return resp, err
	}
	return resp, decode(resp, out)
}

func randomToken(prefix string, letters int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	raw := make([]byte, letters)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	for i, b := range raw {
		raw[i] = alphabet[int(b)%len(alphabet)]
	}
	return prefix + string(raw)
}

// receiptVerifier holds the service's JWKS (fetched when first needed, again with its ETag when
// a head names a key it does not hold: a rotation), the newest head seen per chain (the
// next must follow it), and the tenant and environment answers must name.
type receiptVerifier struct {
	client      *Client
	mu          sync.Mutex
	keys        *KeySet
	etag        string
	pins        *keyPins // nil: the fetched JWKS is trusted
	newest      map[string]*Receipt
	tenant      string
	environment Environment
}

func (v *receiptVerifier) verify(ctx context.Context, body []byte, header string) (*Receipt, error) {
	if header == "" {
		return nil, &ReceiptError{Detail: "the answer carries no Insight-Receipt"}
	}
	parsed, err := parseReceiptHeader(header)
	if err != nil {
		return nil, err
	}
	jws, err := parseHeadJWS(parsed.head)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.pins.admit(jws.kid); err != nil {
		return nil, err
	}
	if v.keys == nil || v.keys.keys[jws.kid] == nil {
		// A failure here is the receipt's, not the evaluation's: the evaluation was recorded,
		// and a transport error would invite the caller to evaluate again.
		if err := v.refresh(ctx); err != nil {
			return nil, &ReceiptError{Detail: "the service's keys could not be fetched: " + err.Error(), Err: err}
		}
	}
	receipt, err := VerifyReceipt(v.keys, body, header)
	if err != nil {
		return nil, err
	}
	if err := v.checkScope(receipt); err != nil {
		return nil, err
	}
	if err := v.checkChain(receipt); err != nil {
		return nil, err
	}
	return receipt, nil
}

// refresh fetches the JWKS, conditionally on the ETag held (304: unchanged).
func (v *receiptVerifier) refresh(ctx context.Context) error {
	req := opGetSigningKeys.request()
	req.headers = http.Header{}
	if v.keys != nil {
		req.headers.Set("Cache-Control", "no-cache")
		if v.etag != "" {
			req.headers.Set("If-None-Match", v.etag)
		}
	}
	resp, err := v.client.call(ctx, req, nil)
	if err != nil {
		return err
	}
	if resp.status == http.StatusNotModified {
		return nil
	}
	keys, err := ParseKeySet(resp.body)
	if err != nil {
		return err
	}
	v.keys, v.etag = v.pins.apply(keys), resp.header.Get("ETag")
	return nil
}

func (v *receiptVerifier) checkScope(r *Receipt) error {
	if v.tenant == "" {
		v.tenant = r.Tenant
	}
	if v.environment == "" {
		v.environment = r.Environment
	}
	if r.Tenant != v.tenant || r.Environment != v.environment {
		return &ReceiptError{Detail: fmt.Sprintf("the answer is tenant %s's in %s, not %s's in %s", r.Tenant, r.Environment, v.tenant, v.environment)}
	}
	return nil
}

// checkChain checks the head's place in its chain (instance, tenant, environment) where this client saw a
// neighbour: the same sequence is the same head, and the next names the newest as previous,
// with a time not earlier (docs/api.md, "Verifying a receipt", step 8).
func (v *receiptVerifier) checkChain(r *Receipt) error {
	chain := r.Instance + "\x00" + r.HeadTenant + "\x00" + r.HeadEnvironment
	seen := v.newest[chain]
	switch {
	case seen == nil:
	case r.Sequence == seen.Sequence && r.Head != seen.Head:
		return &ReceiptError{Detail: fmt.Sprintf("two heads %d of instance %s: its chain forked", r.Sequence, r.Instance)}
	case r.Sequence == seen.Sequence+1 && !bytes.Equal(r.Previous, seen.HeadHash()):
		return &ReceiptError{Detail: fmt.Sprintf("head %d of instance %s does not follow head %d", r.Sequence, r.Instance, seen.Sequence)}
	case r.Sequence == seen.Sequence+1 && r.Time < seen.Time:
		return &ReceiptError{Detail: fmt.Sprintf("head %d of instance %s is older than head %d", r.Sequence, r.Instance, seen.Sequence)}
	}
	if seen == nil || r.Sequence > seen.Sequence {
		v.newest[chain] = r
	}
	return nil
}
