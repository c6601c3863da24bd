package insight

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// replayServer answers with the fixture's real answers (and scripted failures), and serves a
// JWKS that the test swaps, with its ETag: the client's behaviour on the wire, without a daemon
// (the conformance driver runs the same client against a live one).
type replayServer struct {
	t        *testing.T
	mu       sync.Mutex
	jwks     string
	etag     string
	keysDown bool
	keyGets  []http.Header
	bodies   map[string][]byte // path -> request bodies received
	handlers []http.HandlerFunc
}

func newReplayServer(t *testing.T, jwks string) (*replayServer, *httptest.Server) {
	rs := &replayServer{t: t, jwks: jwks, etag: `"1"`, bodies: map[string][]byte{}}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		if r.URL.Path == "/v1/signing-keys" {
			rs.keyGets = append(rs.keyGets, r.Header.Clone())
			jwks, etag, down := rs.jwks, rs.etag, rs.keysDown
			rs.mu.Unlock()
			if down {
				problem(503, "serverError", nil)(w, r)
				return
			}
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", etag)
			io.WriteString(w, jwks)
			return
		}
		body, _ := io.ReadAll(r.Body)
		rs.bodies[r.URL.Path] = append(rs.bodies[r.URL.Path], append(body, '\n')...)
		if len(rs.handlers) == 0 {
			rs.mu.Unlock()
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
			w.WriteHeader(500)
			return
		}
		next := rs.handlers[0]
		rs.handlers = rs.handlers[1:]
		rs.mu.Unlock()
		next(w, r)
	}))
	t.Cleanup(server.Close)
	return rs, server
}

func (rs *replayServer) then(h ...http.HandlerFunc) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.handlers = append(rs.handlers, h...)
}

func (rs *replayServer) requests(path string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return strings.Count(string(rs.bodies[path]), "\n")
}

func answer(body, receipt string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if receipt != "" {
			w.Header().Set("Insight-Receipt", receipt)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func problem(status int, code string, headers map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"urn:insightd:problem:%s","title":"t","status":%d,"code":"%s","detail":"d","reason":"callerRate"}`, code, status, code)
	}
}

// hangUp reads the request and closes the connection without answering: the request arrived.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func requestOf(t *testing.T, body string) EvaluationRequest {
	var parsed struct {
		RequestID string `json:"requestId"`
	}
	if err := json.Unmarshal([]byte(body), &parsed); err != nil {
		t.Fatal(err)
	}
	return EvaluationRequest{RequestID: parsed.RequestID, OperationCategory: CategoryPayment, Insights: []InsightRequest{IsLikelyBeingCoached()}}
}

func newClient(t *testing.T, url string, retry *RetryPolicy) *Client {
	c, err := New(Options{BaseURL: url, APIKey: "ik_test", Retry: retry, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestJWKSIsFetchedOnceCachedByETagAndRefreshedOnAnUnknownKid(t *testing.T) {
	f, _ := loadFixture(t)
	rs, server := newReplayServer(t, `{"keys":[]}`)
	rs.etag = `"empty"`
	client := newClient(t, server.URL, &NoRetries)
	ctx := context.Background()

	// The set held has no key: the client asks again past caches, with the ETag it holds.
	rs.mu.Lock()
	rs.jwks, rs.etag = f.JWKS, `"real"`
	rs.mu.Unlock()
	client.verifier.keys, client.verifier.etag = &KeySet{keys: map[string]ed25519.PublicKey{}}, `"empty"`
	for _, a := range f.Answers[:5] {
		rs.then(answer(a.Body, a.Receipt))
		ev, err := client.Evaluate(ctx, requestOf(t, a.Body))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Receipt == nil || string(ev.Body) != a.Body || ev.Decision.Action != ActionProceed || ev.Tenant != "default" {
			t.Fatalf("the verified answer is not exposed: %+v", ev)
		}
	}
	if len(rs.keyGets) != 1 || rs.keyGets[0].Get("If-None-Match") != `"empty"` || rs.keyGets[0].Get("Cache-Control") != "no-cache" {
		t.Fatalf("want one conditional refresh, got %v", rs.keyGets)
	}

	// A head signed by a key the service does not publish: one refresh, answered 304, then refused.
	rs.then(answer(forgedAnswer(t, f.Answers[0].Body)))
	_, err := client.Evaluate(ctx, requestOf(t, f.Answers[0].Body))
	mustFailReceipt(t, "a key the JWKS does not hold", err)
	if len(rs.keyGets) != 2 || rs.keyGets[1].Get("If-None-Match") != `"real"` {
		t.Fatalf("want a second conditional refresh, got %v", rs.keyGets)
	}
}

// forgedAnswer signs a one-leaf tree of body with a key of the test's own: a well-formed
// receipt whose key the service never published.
func forgedAnswer(t *testing.T, body string) (string, string) {
	public, private, _ := ed25519.GenerateKey(nil)
	x := base64.RawURLEncoding.EncodeToString(public)
	enc := base64.RawURLEncoding.EncodeToString
	header := enc([]byte(`{"alg":"EdDSA","kid":"` + thumbprint(x) + `"}`))
	root := sha256.Sum256(append([]byte{0}, body...))
	payload := enc([]byte(fmt.Sprintf(`{"instance":"forger","sequence":0,"size":1,"root":"%s","previous":null,"time":1}`, enc(root[:]))))
	signature := enc(ed25519.Sign(private, []byte(header+"."+payload)))
	return body, fmt.Sprintf(`head="%s.%s.%s", index=0, path=()`, header, payload, signature)
}

func TestATamperedAnswerIsRefused(t *testing.T) {
	f, _ := loadFixture(t)
	rs, server := newReplayServer(t, f.JWKS)
	client := newClient(t, server.URL, &NoRetries)
	a := f.Answers[3]
	rs.then(answer(strings.Replace(a.Body, `"proceed"`, `"block"`, 1), a.Receipt), answer(a.Body, ""))
	_, err := client.Evaluate(context.Background(), requestOf(t, a.Body))
	mustFailReceipt(t, "a tampered decision", err)
	_, err = client.Evaluate(context.Background(), requestOf(t, a.Body))
	mustFailReceipt(t, "no receipt", err)

	unverified, _ := New(Options{BaseURL: server.URL, APIKey: "k", DisableReceiptVerification: true})
	rs.then(answer(a.Body, ""))
	if ev, err := unverified.Evaluate(context.Background(), requestOf(t, a.Body)); err != nil || ev.Receipt != nil {
		t.Fatalf("verification disabled: %v", err)
	}
}

func TestKeysThatCannotBeFetchedFailTheReceiptNotTheEvaluation(t *testing.T) {
	f, _ := loadFixture(t)
	rs, server := newReplayServer(t, f.JWKS)
	rs.keysDown = true
	client := newClient(t, server.URL, &NoRetries)
	a := f.Answers[2]
	rs.then(answer(a.Body, a.Receipt))
	_, err := client.Evaluate(context.Background(), requestOf(t, a.Body))
	var te *TransportError
	mustFailReceipt(t, "keys down", err)
	if errors.As(err, &te) || !errors.Is(err, ErrServerError) {
		t.Fatalf("the keys' failure must be a receipt error wrapping the 503: %v", err)
	}
}

func TestAnEvaluationThatReachedTheServiceIsNeverSentAgain(t *testing.T) {
	f, _ := loadFixture(t)
	rs, server := newReplayServer(t, f.JWKS)
	client := newClient(t, server.URL, &RetryPolicy{MaxAttempts: 3, MaxTotalDelay: 5 * time.Second, TransportRetryDelay: 10 * time.Millisecond})
	a := f.Answers[1]
	ctx := context.Background()

	for _, refusal := range []http.HandlerFunc{
		problem(503, "serverError", map[string]string{"Retry-After": "1"}),
		problem(429, "rateLimitExceeded", map[string]string{"Retry-After": "1"}),
		problem(500, "serverError", nil),
		hangUp, // the request arrived and the connection was lost
	} {
		before := rs.requests("/v1/evaluations")
		rs.then(refusal, answer(a.Body, a.Receipt))
		generated := requestOf(t, a.Body)
		generated.RequestID = "" // a requestId the client makes names nothing the caller can retry
		_, err := client.Evaluate(ctx, generated)
		var apiErr *APIError
		var te *TransportError
		switch {
		case errors.As(err, &apiErr):
			if apiErr.Attempts != 1 {
				t.Fatalf("%v: %d attempts", err, apiErr.Attempts)
			}
		case errors.As(err, &te):
			if !te.MayHaveArrived || te.Attempts != 1 {
				t.Fatalf("a lost answer: %+v", te)
			}
		default:
			t.Fatalf("want the refusal, got %v", err)
		}
		if rs.requests("/v1/evaluations") != before+1 {
			t.Fatalf("%v: the evaluation was sent again", err)
		}
		rs.handlers = nil
	}
	rs.then(answer(a.Body, a.Receipt))
	if ev, err := client.Evaluate(ctx, requestOf(t, a.Body)); err != nil || ev.Attempts != 1 {
		t.Fatalf("%v", err)
	}
}

func TestOnlyAnEvaluationWithTheCallersRequestIDIsSentAgain(t *testing.T) {
	f, _ := loadFixture(t)
	rs, server := newReplayServer(t, f.JWKS)
	retry := &RetryPolicy{MaxAttempts: 3, MaxTotalDelay: time.Second, TransportRetryDelay: 10 * time.Millisecond}
	client, _ := New(Options{BaseURL: server.URL, APIKey: "k", Retry: retry})
	a := f.Answers[4]
	replayed := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Idempotent-Replayed", "true")
		answer(a.Body, a.Receipt)(w, r)
	}
	rs.then(hangUp, replayed)
	ev, err := client.Evaluate(context.Background(), requestOf(t, a.Body))
	if err != nil || !ev.Replayed || ev.Attempts != 2 || rs.requests("/v1/evaluations") != 2 {
		t.Fatalf("the caller's requestId is retried by default: %v", err)
	}
	sent := strings.Split(strings.TrimSpace(string(rs.bodies["/v1/evaluations"])), "\n")
	if sent[0] != sent[1] {
		t.Fatalf("the retry is not the same bytes: %q", sent)
	}
	rs.handlers = nil
	rs.then(hangUp, replayed)
	generated := requestOf(t, a.Body)
	generated.RequestID = ""
	var te *TransportError
	if _, err := client.Evaluate(context.Background(), generated); !errors.As(err, &te) || rs.requests("/v1/evaluations") != 3 {
		t.Fatalf("a generated requestId was retried: %v", err)
	}
	rs.handlers = nil
	rs.then(hangUp, replayed)
	older, _ := New(Options{BaseURL: server.URL, APIKey: "k", Retry: retry, DisableIdempotentEvaluations: true})
	if _, err := older.Evaluate(context.Background(), requestOf(t, a.Body)); !errors.As(err, &te) || rs.requests("/v1/evaluations") != 4 {
		t.Fatalf("with DisableIdempotentEvaluations the caller's requestId was retried: %v", err)
	}
}

func TestAReportIsRetriedAfterA503WithTheSameBytes(t *testing.T) {
	rs, server := newReplayServer(t, `{"keys":[]}`)
	client := newClient(t, server.URL, &RetryPolicy{MaxAttempts: 3, MaxTotalDelay: 5 * time.Second, TransportRetryDelay: 10 * time.Millisecond})
	rs.then(problem(503, "serverError", map[string]string{"Retry-After": "1"}), func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	started := time.Now()
	err := client.ReportConsumption(context.Background(), "e1", ConsumptionReport{Status: UsedEvaluationOnly, InsightIDsUsed: []string{"i"}})
	sent := strings.Split(strings.TrimSpace(string(rs.bodies["/v1/evaluations/e1/consumption"])), "\n")
	if err != nil || len(sent) != 2 || sent[0] != sent[1] || time.Since(started) < time.Second {
		t.Fatalf("%v %q", err, sent)
	}
}

func TestAnUnreachableServiceIsRetriedAndReportedAsNotArrived(t *testing.T) {
	listener, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + listener.Addr().String()
	listener.Close()
	client := newClient(t, url, &RetryPolicy{MaxAttempts: 3, MaxTotalDelay: time.Second, TransportRetryDelay: 20 * time.Millisecond})
	started := time.Now()
	_, err := client.Evaluate(context.Background(), EvaluationRequest{OperationCategory: CategoryPayment, Insights: []InsightRequest{IsLikelyBeingCoached()}})
	var te *TransportError
	if !errors.As(err, &te) || te.MayHaveArrived {
		t.Fatalf("want a transport error that did not arrive: %v", err)
	}
	if elapsed := time.Since(started); elapsed < 60*time.Millisecond {
		t.Fatalf("three attempts wait 20 + 40 ms, took %s", elapsed)
	}
}

func TestProblemsAreTypedErrorsWithRetryAfter(t *testing.T) {
	rs, server := newReplayServer(t, `{"keys":[]}`)
	client := newClient(t, server.URL, &NoRetries)
	ctx := context.Background()
	rs.then(problem(429, "rateLimitExceeded", map[string]string{"Retry-After": "7"}))
	_, err := client.Evaluate(ctx, EvaluationRequest{OperationCategory: CategoryPayment, Insights: []InsightRequest{IsLikelyBeingCoached()}})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, ErrRateLimitExceeded) || apiErr.RetryAfter != 7*time.Second ||
		apiErr.Reason != ReasonCallerRate || !apiErr.MayRetry() {
		t.Fatalf("%#v", err)
	}
	for _, code := range ProblemCodes {
		rs.then(problem(422, string(code), nil))
		_, err := client.Catalog(ctx)
		if !errors.Is(err, &APIError{Code: code}) || errors.Is(err, ErrDenied) != (code == CodeDenied) {
			t.Fatalf("%s: %v", code, err)
		}
	}
	rs.then(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) })
	if _, err := client.Catalog(ctx); !errors.Is(err, ErrServerError) {
		t.Fatalf("a proxy's 502 without a problem: %v", err)
	}
}

func TestRequestChecksBeforeAndAfterSending(t *testing.T) {
	f, _ := loadFixture(t)
	rs, server := newReplayServer(t, f.JWKS)
	client := newClient(t, server.URL, &NoRetries)
	ctx := context.Background()
	req := requestOf(t, f.Answers[0].Body)
	if _, err := client.Evaluate(ctx, req, WithHeader("authorization", "Bearer x")); err == nil {
		t.Fatal("an owned header was sent")
	}
	if _, err := client.Evaluate(ctx, req, WithOverride("isLikelyBeingCoached=high\r\nX: y")); err == nil {
		t.Fatal("a header with a line break was sent")
	}
	if _, err := client.SubmitLabels(ctx, make([]Label, MaxLabelsPerSubmission+1), "k"); err == nil {
		t.Fatal("1,001 labels were sent")
	}
	if rs.requests("/v1/evaluations")+rs.requests("/v1/labels") != 0 {
		t.Fatal("a refused call reached the server")
	}
	req.RequestID = "another"
	rs.then(answer(f.Answers[0].Body, f.Answers[0].Receipt))
	var unexpected *UnexpectedResponseError
	if _, err := client.Evaluate(ctx, req); !errors.As(err, &unexpected) {
		t.Fatalf("an answer to another requestId: %v", err)
	}
}

func TestLabelsCarryTheirIdempotencyKeyAndDates(t *testing.T) {
	rs, server := newReplayServer(t, `{"keys":[]}`)
	client := newClient(t, server.URL, &NoRetries)
	var seen http.Header
	rs.then(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		w.Header().Set("Idempotent-Replayed", "true")
		io.WriteString(w, `{"results":[{"index":0,"insightId":"i1","status":"accepted"},{"index":1,"status":"invalid","field":"labels[1].insightId","detail":"x"}],"summary":{"accepted":1,"duplicate":0,"conflict":0,"unknownInsight":0,"invalid":1}}`)
	})
	day := time.Date(2026, 12, 5, 23, 30, 0, 0, time.FixedZone("x", -3600))
	out, err := client.SubmitLabels(context.Background(), []Label{
		{InsightID: "i1", Outcome: ConfirmedFraud, FraudType: FraudOther, DiscoveredAt: day},
		{InsightID: "", Outcome: ConfirmedLegitimate, DiscoveredAt: day},
	}, "batch-1")
	if err != nil || !out.Replayed || out.Results[1].Status != LabelInvalid || seen.Get("Idempotency-Key") != "batch-1" {
		t.Fatalf("%v %+v", err, out)
	}
	want := `{"labels":[{"insightId":"i1","outcome":"confirmedFraud","fraudType":"other","discoveredAt":"2026-12-06"},{"insightId":"","outcome":"confirmedLegitimate","discoveredAt":"2026-12-06"}]}`
	if got := strings.TrimSpace(string(rs.bodies["/v1/labels"])); got != want {
		t.Fatalf("sent %s", got)
	}
}

func TestInteractionSourceIsSentAsTheAPINamesIt(t *testing.T) {
	dropped := 0
	for _, c := range []struct {
		source InteractionSource
		want   string
	}{
		{InteractionSource{Kit: "web-kit", Version: "2.1.0", Platform: PlatformWeb},
			`{"source":{"kit":"web-kit","version":"2.1.0","platform":"web"}}`},
		{InteractionSource{Kit: "ios-kit", Version: "1.0.0", Platform: PlatformIOS, DroppedEvents: &dropped},
			`{"source":{"kit":"ios-kit","version":"1.0.0","platform":"ios","droppedEvents":0}}`},
	} {
		source := c.source
		data, err := json.Marshal(Interaction{Source: &source})
		if err != nil || string(data) != c.want {
			t.Fatalf("%s: %v", data, err)
		}
	}
}
