package insight

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Code is an RFC 9457 problem `code` of insightd (docs/api.md, "Errors"). Branch on it, never
// on Detail. A code a later service version adds arrives as its own string.
type Code string

// The problem codes of openapi/openapi.json (Problem.code).
const (
	CodeContextInvalid          Code = "contextInvalid"
	CodeUnauthorized            Code = "unauthorized"
	CodeForbidden               Code = "forbidden"
	CodeDenied                  Code = "denied"
	CodeOverrideNotAllowed      Code = "overrideNotAllowed"
	CodeNotFound                Code = "notFound"
	CodeEvaluationNotFound      Code = "evaluationNotFound"
	CodeCallerNotFound          Code = "callerNotFound"
	CodeKeyNotFound             Code = "keyNotFound"
	CodeMethodNotAllowed        Code = "methodNotAllowed"
	CodeConsumptionConflict     Code = "consumptionConflict"
	CodeIdempotencyKeyReused    Code = "idempotencyKeyReused"
	CodeUnsupportedMediaType    Code = "unsupportedMediaType"
	CodePayloadTooLarge         Code = "payloadTooLarge"
	CodeHeadersTooLarge         Code = "headersTooLarge"
	CodeMalformedRequest        Code = "malformedRequest"
	CodeRequestTimeout          Code = "requestTimeout"
	CodeNotImplemented          Code = "notImplemented"
	CodeHTTPVersionNotSupported Code = "httpVersionNotSupported"
	CodeRateLimitExceeded       Code = "rateLimitExceeded"
	CodeServerError             Code = "serverError"
)

// ProblemCodes lists every problem code this client version knows, in the document's order.
var ProblemCodes = []Code{
	CodeContextInvalid, CodeUnauthorized, CodeForbidden, CodeDenied, CodeOverrideNotAllowed, CodeNotFound,
	CodeEvaluationNotFound, CodeCallerNotFound, CodeKeyNotFound, CodeMethodNotAllowed, CodeConsumptionConflict,
	CodeIdempotencyKeyReused, CodeUnsupportedMediaType, CodePayloadTooLarge, CodeHeadersTooLarge,
	CodeMalformedRequest, CodeRequestTimeout, CodeNotImplemented, CodeHTTPVersionNotSupported,
	CodeRateLimitExceeded, CodeServerError,
}

// RateLimitReason says which limit a 429 hit (Problem.reason; docs/rate-limits.md).
type RateLimitReason string

// The reasons of openapi/openapi.json (Problem.reason).
const (
	ReasonCallerRate       RateLimitReason = "callerRate"
	ReasonReportingPenalty RateLimitReason = "reportingPenalty"
	ReasonDeviceRate       RateLimitReason = "deviceRate"
	ReasonDenialCapacity   RateLimitReason = "denialCapacity"
)

// RateLimitReasons lists the reasons this client version knows.
var RateLimitReasons = []RateLimitReason{ReasonCallerRate, ReasonReportingPenalty, ReasonDeviceRate, ReasonDenialCapacity}

// ThrottleReasons lists the reasons a caller's rate-limit state records (RateLimitState's
// lastReason): denialCapacity is the tenant's, not a throttle of the caller.
var ThrottleReasons = []RateLimitReason{ReasonCallerRate, ReasonReportingPenalty, ReasonDeviceRate}

// APIError is a request the service refused: its status and RFC 9457 problem. Match a code
// with errors.Is(err, insight.ErrDenied) (any APIError of that code) or read it with
// errors.As(err, &apiErr).
type APIError struct {
	Status int
	Code   Code
	Detail string
	// Field names the offending input (`insights[1].schemaVersion`, `(body)`, a header).
	Field string
	// Reason says which limit a 429 hit.
	Reason RateLimitReason
	// RetryAfter is the service's advice (Retry-After, or the problem's retryAfterSeconds);
	// zero when it gave none. With it, a 503 or 429 recorded nothing and may be retried.
	RetryAfter time.Duration
	// Attempts is how many times the client sent the request.
	Attempts int
}

func (e *APIError) Error() string {
	text := fmt.Sprintf("insightd: %s (%d)", e.Code, e.Status)
	if e.Field != "" {
		text += " " + e.Field
	}
	if e.Detail != "" {
		text += ": " + e.Detail
	}
	if e.RetryAfter > 0 {
		text += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return text
}

// Is makes errors.Is(err, ErrX) true for any APIError of ErrX's code.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Status == 0 && t.Code == e.Code
}

// MayRetry says whether the service said a retry may succeed: a 503 or 429 with RetryAfter
// (nothing was recorded). The client has retried already where that was safe.
func (e *APIError) MayRetry() bool {
	return e.RetryAfter > 0 && (e.Status == 429 || e.Status >= 500)
}

// Sentinels for errors.Is, one per problem code.
var (
	ErrContextInvalid       = &APIError{Code: CodeContextInvalid}
	ErrUnauthorized         = &APIError{Code: CodeUnauthorized}
	ErrForbidden            = &APIError{Code: CodeForbidden}
	ErrDenied               = &APIError{Code: CodeDenied}
	ErrOverrideNotAllowed   = &APIError{Code: CodeOverrideNotAllowed}
	ErrNotFound             = &APIError{Code: CodeNotFound}
	ErrEvaluationNotFound   = &APIError{Code: CodeEvaluationNotFound}
	ErrCallerNotFound       = &APIError{Code: CodeCallerNotFound}
	ErrKeyNotFound          = &APIError{Code: CodeKeyNotFound}
	ErrMethodNotAllowed     = &APIError{Code: CodeMethodNotAllowed}
	ErrConsumptionConflict  = &APIError{Code: CodeConsumptionConflict}
	ErrIdempotencyKeyReused = &APIError{Code: CodeIdempotencyKeyReused}
	ErrUnsupportedMediaType = &APIError{Code: CodeUnsupportedMediaType}
	ErrPayloadTooLarge      = &APIError{Code: CodePayloadTooLarge}
	ErrHeadersTooLarge      = &APIError{Code: CodeHeadersTooLarge}
	ErrMalformedRequest     = &APIError{Code: CodeMalformedRequest}
	ErrRequestTimeout       = &APIError{Code: CodeRequestTimeout}
	ErrNotImplemented       = &APIError{Code: CodeNotImplemented}
	ErrHTTPVersion          = &APIError{Code: CodeHTTPVersionNotSupported}
	ErrRateLimitExceeded    = &APIError{Code: CodeRateLimitExceeded}
	ErrServerError          = &APIError{Code: CodeServerError}
)

// TransportError is a request that got no HTTP answer: the host could not be reached, the
// connection was lost, or the timeout passed.
type TransportError struct {
	Err error
	// MayHaveArrived is false when the request cannot have reached the service (no
	// connection was made), true when it may have been received and acted on.
	MayHaveArrived bool
	// Attempts is how many times the client tried.
	Attempts int
}

func (e *TransportError) Error() string { return "insightd: transport: " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// ReceiptError is an answer whose Insight-Receipt does not prove it: missing or malformed,
// signed by no key of the service's JWKS, a body that does not lead to the signed root, a head
// that does not follow the instance's head seen before, or another tenant's or environment's
// answer, or keys that could not be fetched to check it (Err). Never retried: do not act on
// the answer; it was recorded, so do not evaluate again either.
type ReceiptError struct {
	Detail string
	// Err is why the service's keys could not be fetched, when that is why.
	Err error
}

func (e *ReceiptError) Error() string { return "insightd: receipt invalid: " + e.Detail }
func (e *ReceiptError) Unwrap() error { return e.Err }

// UnexpectedResponseError is a response that breaks the API contract (not the JSON the
// document promises, an answer to another requestId, an insight list that does not match the
// request). Do not use it.
type UnexpectedResponseError struct{ Detail string }

func (e *UnexpectedResponseError) Error() string { return "insightd: unexpected response: " + e.Detail }

// problemFrom maps a non-success response to its APIError. Proxies may answer without a
// problem body: the status decides then.
func problemFrom(status int, header func(string) string, body []byte) error {
	var p struct {
		Code              string   `json:"code"`
		Detail            string   `json:"detail"`
		Field             string   `json:"field"`
		Reason            string   `json:"reason"`
		RetryAfterSeconds *float64 `json:"retryAfterSeconds"`
	}
	_ = json.Unmarshal(body, &p)
	e := &APIError{Status: status, Code: Code(p.Code), Detail: p.Detail, Field: p.Field, Reason: RateLimitReason(p.Reason)}
	if seconds, err := strconv.ParseFloat(strings.TrimSpace(header("Retry-After")), 64); err == nil && seconds >= 0 {
		e.RetryAfter = time.Duration(seconds * float64(time.Second))
	} else if p.RetryAfterSeconds != nil && *p.RetryAfterSeconds >= 0 {
		e.RetryAfter = time.Duration(*p.RetryAfterSeconds * float64(time.Second))
	}
	if e.Code == "" {
		switch {
		case status == 401:
			e.Code = CodeUnauthorized
		case status == 429:
			e.Code = CodeRateLimitExceeded
		case status >= 500:
			e.Code = CodeServerError
		default:
			return &UnexpectedResponseError{Detail: fmt.Sprintf("HTTP %d without a problem body", status)}
		}
	}
	return e
}
