package insight

import (
	"encoding/json"
	"time"
)

// The enumerations are open string types: a value a later service version adds still travels
// (and a client compares it with the constants it knows). Each has the list of its values.

// OperationCategory is what the person is about to do.
type OperationCategory string

const (
	CategoryPayment       OperationCategory = "payment"
	CategoryAccount       OperationCategory = "account"
	CategoryResourceUse   OperationCategory = "resourceUse"
	CategoryCommunication OperationCategory = "communication"
	CategoryOther         OperationCategory = "other"
)

// OperationCategories lists the categories this client version knows.
var OperationCategories = []OperationCategory{CategoryPayment, CategoryAccount, CategoryResourceUse, CategoryCommunication, CategoryOther}

// Environment is a key's environment.
type Environment string

const (
	Production Environment = "production"
	Sandbox    Environment = "sandbox"
)

// Environments lists the environments this client version knows.
var Environments = []Environment{Production, Sandbox}

// Value is an insight's answer. Unknown means no evidence, never "low risk".
type Value string

const (
	ValueUnknown Value = "unknown"
	ValueMedium  Value = "medium"
	ValueHigh    Value = "high"
)

// Values lists the insight values this client version knows.
var Values = []Value{ValueUnknown, ValueMedium, ValueHigh}

// InsightErrorCode is an insight-level error: one insight failed, the evaluation did not.
type InsightErrorCode string

const (
	InsightEvaluationFailed    InsightErrorCode = "insightEvaluationFailed"
	InsightUnavailable         InsightErrorCode = "insightUnavailable"
	InsightVersionIncompatible InsightErrorCode = "insightVersionIncompatible"
	InsightVersionUnavailable  InsightErrorCode = "insightVersionUnavailable"
	InsightRateLimitError      InsightErrorCode = "rateLimitError"
)

// InsightErrorCodes lists the insight-level error codes this client version knows.
var InsightErrorCodes = []InsightErrorCode{InsightEvaluationFailed, InsightUnavailable, InsightVersionIncompatible, InsightVersionUnavailable, InsightRateLimitError}

// DecisionAction is what the service's decision policy advises. Treat a value this client
// version does not know as ActionBlock.
type DecisionAction string

const (
	ActionProceed          DecisionAction = "proceed"
	ActionConfirm          DecisionAction = "confirm"
	ActionConfirmOutOfBand DecisionAction = "confirmOutOfBand"
	ActionBlock            DecisionAction = "block"
)

// DecisionActions lists the actions this client version knows, weakest first.
var DecisionActions = []DecisionAction{ActionProceed, ActionConfirm, ActionConfirmOutOfBand, ActionBlock}

// ConsumptionStatus is what the caller did with an evaluation.
type ConsumptionStatus string

const (
	UsedReducedFriction   ConsumptionStatus = "usedReducedFriction"
	UsedUnchangedFriction ConsumptionStatus = "usedUnchangedFriction"
	UsedIncreasedFriction ConsumptionStatus = "usedIncreasedFriction"
	NotUsedNotNeeded      ConsumptionStatus = "notUsedNotNeeded"
	NotUsedError          ConsumptionStatus = "notUsedError"
	UsedEvaluationOnly    ConsumptionStatus = "usedEvaluationOnly"
)

// ConsumptionStatuses lists the statuses this client version knows.
var ConsumptionStatuses = []ConsumptionStatus{UsedReducedFriction, UsedUnchangedFriction, UsedIncreasedFriction, NotUsedNotNeeded, NotUsedError, UsedEvaluationOnly}

// Platform is where a capture kit runs (InteractionSource.Platform); PlatformWeb for web pages
// and web views. The model's thresholds are chosen by it.
type Platform string

const (
	PlatformWeb     Platform = "web"
	PlatformIOS     Platform = "ios"
	PlatformAndroid Platform = "android"
	PlatformOther   Platform = "other"
)

// Platforms lists the platforms this client version knows.
var Platforms = []Platform{PlatformWeb, PlatformIOS, PlatformAndroid, PlatformOther}

// EventType is an interaction event's type (timing only, never what was typed).
type EventType string

const (
	EventSessionStart     EventType = "sessionStart"
	EventFieldFocus       EventType = "fieldFocus"
	EventFieldBlur        EventType = "fieldBlur"
	EventKeyDown          EventType = "keyDown"
	EventDelete           EventType = "delete"
	EventPaste            EventType = "paste"
	EventTap              EventType = "tap"
	EventScroll           EventType = "scroll"
	EventAppBackground    EventType = "appBackground"
	EventAppForeground    EventType = "appForeground"
	EventCallStart        EventType = "callStart"
	EventCallEnd          EventType = "callEnd"
	EventScreenShareStart EventType = "screenShareStart"
	EventScreenShareEnd   EventType = "screenShareEnd"
	EventOrientation      EventType = "orientationChange"
	EventProximityNear    EventType = "proximityNear"
	EventProximityFar     EventType = "proximityFar"
	EventSubmit           EventType = "submit"
)

// EventTypes lists the event types this client version knows.
var EventTypes = []EventType{EventSessionStart, EventFieldFocus, EventFieldBlur, EventKeyDown, EventDelete, EventPaste, EventTap,
	EventScroll, EventAppBackground, EventAppForeground, EventCallStart, EventCallEnd, EventScreenShareStart, EventScreenShareEnd,
	EventOrientation, EventProximityNear, EventProximityFar, EventSubmit}

// Field is the input field an event happened in.
type Field string

const (
	FieldPayee     Field = "payee"
	FieldAmount    Field = "amount"
	FieldReference Field = "reference"
	FieldOTP       Field = "otp"
	FieldPassword  Field = "password"
	FieldOther     Field = "other"
)

// Fields lists the fields this client version knows.
var Fields = []Field{FieldPayee, FieldAmount, FieldReference, FieldOTP, FieldPassword, FieldOther}

// AmountBand is the transaction's amount, banded.
type AmountBand string

const (
	AmountLow    AmountBand = "low"
	AmountMedium AmountBand = "medium"
	AmountHigh   AmountBand = "high"
)

// AmountBands lists the bands this client version knows.
var AmountBands = []AmountBand{AmountLow, AmountMedium, AmountHigh}

// InitiatorKind says who chose the operation.
type InitiatorKind string

const (
	InitiatorPerson InitiatorKind = "person"
	InitiatorAgent  InitiatorKind = "agent"
)

// InitiatorKinds lists the kinds this client version knows.
var InitiatorKinds = []InitiatorKind{InitiatorPerson, InitiatorAgent}

// UntrustedContext is a source of untrusted text an AI agent read.
type UntrustedContext string

const (
	ContextEmail      UntrustedContext = "email"
	ContextMessage    UntrustedContext = "message"
	ContextWeb        UntrustedContext = "web"
	ContextCalendar   UntrustedContext = "calendar"
	ContextDocument   UntrustedContext = "document"
	ContextPublicFeed UntrustedContext = "publicFeed"
	ContextToolOutput UntrustedContext = "toolOutput"
)

// UntrustedContexts lists the sources this client version knows.
var UntrustedContexts = []UntrustedContext{ContextEmail, ContextMessage, ContextWeb, ContextCalendar, ContextDocument, ContextPublicFeed, ContextToolOutput}

// SideEffect is what an agent's operation would do.
type SideEffect string

const (
	EffectFinancial             SideEffect = "financial"
	EffectExternalCommunication SideEffect = "externalCommunication"
	EffectDestructive           SideEffect = "destructive"
	EffectPersistentStorage     SideEffect = "persistentStorage"
	EffectSensitiveDataAccess   SideEffect = "sensitiveDataAccess"
	EffectDeviceControl         SideEffect = "deviceControl"
)

// SideEffects lists the side effects this client version knows.
var SideEffects = []SideEffect{EffectFinancial, EffectExternalCommunication, EffectDestructive, EffectPersistentStorage, EffectSensitiveDataAccess, EffectDeviceControl}

// InsightTypeIsLikelyBeingCoached is the insight type insightd serves.
const InsightTypeIsLikelyBeingCoached = "isLikelyBeingCoached"

// InsightTypes lists the insight types this client version knows.
var InsightTypes = []string{InsightTypeIsLikelyBeingCoached}

// EvaluationRequest is the body of POST /v1/evaluations. Leave optional members nil or empty.
type EvaluationRequest struct {
	// RequestID is yours (1–128 characters), echoed and checked; generated when empty.
	RequestID         string            `json:"requestId,omitempty"`
	OperationCategory OperationCategory `json:"operationCategory"`
	Insights          []InsightRequest  `json:"insights"`
	Subject           *Subject          `json:"subject,omitempty"`
	Interaction       *Interaction      `json:"interaction,omitempty"`
	Transaction       *Transaction      `json:"transaction,omitempty"`
	Initiator         *Initiator        `json:"initiator,omitempty"`
}

// InsightRequest asks for one insight; ModelVersion empty means the current model.
type InsightRequest struct {
	Type          string `json:"type"`
	SchemaVersion int    `json:"schemaVersion"`
	ModelVersion  string `json:"modelVersion,omitempty"`
}

// IsLikelyBeingCoached asks for the coaching insight, schema 1, current model.
func IsLikelyBeingCoached() InsightRequest {
	return InsightRequest{Type: InsightTypeIsLikelyBeingCoached, SchemaVersion: 1}
}

// Subject holds the identifiers the service hashes on arrival (velocity, opt-outs).
type Subject struct {
	Account      string `json:"account,omitempty"`
	Device       string `json:"device,omitempty"`
	Counterparty string `json:"counterparty,omitempty"`
}

// Interaction is the session's timing: Events or Summary (not both), Device facts, and the
// Source: the capture kit that observed it.
type Interaction struct {
	Events []InteractionEvent `json:"events,omitempty"`
	// Summary is a feature vector computed on the device (names in docs/features.md).
	Summary map[string]float64 `json:"summary,omitempty"`
	Device  *DeviceFacts       `json:"device,omitempty"`
	Source  *InteractionSource `json:"source,omitempty"`
}

// InteractionSource names the capture kit that produced the interaction: Kit and Version are
// tokens, never text; Platform selects the model's thresholds; DroppedEvents, when the kit
// counts them, is how many events it could not keep.
type InteractionSource struct {
	Kit           string   `json:"kit"`
	Version       string   `json:"version"`
	Platform      Platform `json:"platform"`
	DroppedEvents *int     `json:"droppedEvents,omitempty"`
}

// InteractionEvent is one event, T milliseconds after sessionStart.
type InteractionEvent struct {
	T     int       `json:"t"`
	Type  EventType `json:"type"`
	Field Field     `json:"field,omitempty"`
}

// DeviceFacts are what the device knows about the session.
type DeviceFacts struct {
	ActiveCall               *bool `json:"activeCall,omitempty"`
	CallStartedBeforeSession *bool `json:"callStartedBeforeSession,omitempty"`
	ScreenSharing            *bool `json:"screenSharing,omitempty"`
	RemoteAccessApp          *bool `json:"remoteAccessApp,omitempty"`
}

// Transaction holds the facts the decision policy reads.
type Transaction struct {
	NewCounterparty *bool      `json:"newCounterparty,omitempty"`
	AmountBand      AmountBand `json:"amountBand,omitempty"`
}

// Initiator says who chose the operation: a person, or an AI agent in your app.
type Initiator struct {
	Kind  InitiatorKind `json:"kind,omitempty"`
	Agent *AgentFacts   `json:"agent,omitempty"`
}

// AgentFacts describe an operation an AI agent chose (docs/decisions.md).
type AgentFacts struct {
	UserRequested                 *bool              `json:"userRequested,omitempty"`
	UntrustedContext              []UntrustedContext `json:"untrustedContext,omitempty"`
	ArgumentsFromUntrustedContext *bool              `json:"argumentsFromUntrustedContext,omitempty"`
	SideEffects                   []SideEffect       `json:"sideEffects,omitempty"`
}

// Bool returns a pointer to b, for the optional booleans of requests.
func Bool(b bool) *bool { return &b }

// Evaluation is a verified answer of POST /v1/evaluations (EvaluationResponse).
type Evaluation struct {
	EventID             string          `json:"eventId"`
	RequestID           string          `json:"requestId,omitempty"`
	Tenant              string          `json:"tenant"`
	Environment         Environment     `json:"environment"`
	ServerTimestamp     time.Time       `json:"serverTimestamp"`
	ReportConsumptionBy time.Time       `json:"reportConsumptionBy"`
	Insights            []InsightResult `json:"insights"`
	Decision            Decision        `json:"decision"`
	// Receipt is the answer's verified proof (nil when verification is disabled). Store
	// Receipt.Header and Body with the transaction.
	Receipt *Receipt `json:"-"`
	// Body is the response body, byte for byte: what the receipt proves.
	Body []byte `json:"-"`
	// Attempts is how many times the client sent the request (more than one only when the
	// earlier attempts could not reach the service).
	Attempts int `json:"-"`
	// Replayed is true when the service answered a retry with the evaluation it had recorded
	// for this requestId (Idempotent-Replayed): the same bytes, the same EventID.
	Replayed bool `json:"-"`
}

// InsightResult is one requested insight's answer, in request order.
type InsightResult struct {
	InsightID           string         `json:"insightId"`
	Type                string         `json:"type"`
	SchemaVersion       int            `json:"schemaVersion"`
	ModelVersion        string         `json:"modelVersion,omitempty"`
	NewestModelVersion  string         `json:"newestModelVersion,omitempty"`
	IsUsingCurrentModel *bool          `json:"isUsingCurrentModel,omitempty"`
	Outcome             InsightOutcome `json:"outcome"`
	Reasons             []string       `json:"reasons,omitempty"`
}

// InsightOutcome is a value or an insight-level error.
type InsightOutcome struct {
	Value Value         `json:"value,omitempty"`
	Error *InsightError `json:"error,omitempty"`
}

// InsightError is an insight that failed; the others of the evaluation stand.
type InsightError struct {
	Code   InsightErrorCode `json:"code"`
	Detail string           `json:"detail"`
}

// Decision is the service's decision policy's advice (docs/decisions.md).
type Decision struct {
	Action        DecisionAction `json:"action"`
	Reasons       []string       `json:"reasons"`
	PolicyVersion string         `json:"policyVersion"`
}

// Insight returns the first result of that type, or nil.
func (e *Evaluation) Insight(insightType string) *InsightResult {
	for i := range e.Insights {
		if e.Insights[i].Type == insightType {
			return &e.Insights[i]
		}
	}
	return nil
}

// InsightIDs lists the evaluation's insight ids, for a consumption report.
func (e *Evaluation) InsightIDs() []string {
	ids := make([]string, 0, len(e.Insights))
	for _, r := range e.Insights {
		ids = append(ids, r.InsightID)
	}
	return ids
}

// ConsumptionReport is the body of POST /v1/evaluations/{eventId}/consumption.
type ConsumptionReport struct {
	Status         ConsumptionStatus `json:"status"`
	InsightIDsUsed []string          `json:"insightIdsUsed,omitempty"`
}

// LabelOutcome is what the investigation found.
type LabelOutcome string

const (
	ConfirmedFraud      LabelOutcome = "confirmedFraud"
	ConfirmedLegitimate LabelOutcome = "confirmedLegitimate"
)

// LabelOutcomes lists the outcomes this client version knows.
var LabelOutcomes = []LabelOutcome{ConfirmedFraud, ConfirmedLegitimate}

// FraudType is the kind of confirmed fraud.
type FraudType string

const (
	FraudTechSupportScam        FraudType = "techSupportScam"
	FraudAuthorityImpersonation FraudType = "authorityImpersonation"
	FraudFamilyEmergency        FraudType = "familyEmergency"
	FraudRomanceScam            FraudType = "romanceScam"
	FraudInvestmentScam         FraudType = "investmentScam"
	FraudPurchaseScam           FraudType = "purchaseScam"
	FraudAccountTakeover        FraudType = "accountTakeover"
	FraudOther                  FraudType = "other"
)

// FraudTypes lists the fraud types this client version knows.
var FraudTypes = []FraudType{FraudTechSupportScam, FraudAuthorityImpersonation, FraudFamilyEmergency, FraudRomanceScam,
	FraudInvestmentScam, FraudPurchaseScam, FraudAccountTakeover, FraudOther}

// Label is one item of POST /v1/labels. DiscoveredAt is sent as its UTC date.
type Label struct {
	InsightID    string
	Outcome      LabelOutcome
	FraudType    FraudType // required for ConfirmedFraud, absent otherwise
	DiscoveredAt time.Time
}

// MarshalJSON writes the label with its date as YYYY-MM-DD.
func (l Label) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		InsightID    string       `json:"insightId"`
		Outcome      LabelOutcome `json:"outcome"`
		FraudType    FraudType    `json:"fraudType,omitempty"`
		DiscoveredAt string       `json:"discoveredAt"`
	}{l.InsightID, l.Outcome, l.FraudType, l.DiscoveredAt.UTC().Format("2006-01-02")})
}

// LabelResultStatus is the fate of one label.
type LabelResultStatus string

const (
	LabelAccepted       LabelResultStatus = "accepted"
	LabelDuplicate      LabelResultStatus = "duplicate"
	LabelConflict       LabelResultStatus = "conflict"
	LabelUnknownInsight LabelResultStatus = "unknownInsight"
	LabelInvalid        LabelResultStatus = "invalid"
)

// LabelResultStatuses lists the statuses this client version knows.
var LabelResultStatuses = []LabelResultStatus{LabelAccepted, LabelDuplicate, LabelConflict, LabelUnknownInsight, LabelInvalid}

// LabelResults is the answer of POST /v1/labels: one result per label, in order.
type LabelResults struct {
	Results []LabelResult `json:"results"`
	Summary LabelSummary  `json:"summary"`
	// Replayed is true when the answer is the replay of an earlier submission with the same
	// Idempotency-Key (Idempotent-Replayed).
	Replayed bool `json:"-"`
}

// LabelResult is one label's result; Field and Detail explain an invalid one.
type LabelResult struct {
	Index     int               `json:"index"`
	InsightID string            `json:"insightId,omitempty"`
	Status    LabelResultStatus `json:"status"`
	Field     string            `json:"field,omitempty"`
	Detail    string            `json:"detail,omitempty"`
}

// LabelSummary counts the results per status.
type LabelSummary struct {
	Accepted       int `json:"accepted"`
	Duplicate      int `json:"duplicate"`
	Conflict       int `json:"conflict"`
	UnknownInsight int `json:"unknownInsight"`
	Invalid        int `json:"invalid"`
}

// AuthorizationStatus is a person's choice about insights.
type AuthorizationStatus string

const (
	Authorized    AuthorizationStatus = "authorized"
	DenialPending AuthorizationStatus = "denialPending"
	Denied        AuthorizationStatus = "denied"
)

// AuthorizationStatuses lists the statuses this client version knows.
var AuthorizationStatuses = []AuthorizationStatus{Authorized, DenialPending, Denied}

// AuthorizationChanges lists the statuses a person's choice sets (SetAuthorization);
// DenialPending is the service's, while a denial waits for its cooldown.
var AuthorizationChanges = []AuthorizationStatus{Denied, Authorized}

// AuthorizationSubject names one account or one device (exactly one).
type AuthorizationSubject struct {
	Account string `json:"account,omitempty"`
	Device  string `json:"device,omitempty"`
}

// AuthorizationState is a subject's choice and its dates (nil when not applicable).
type AuthorizationState struct {
	Status      AuthorizationStatus `json:"status"`
	RequestedAt *time.Time          `json:"requestedAt"`
	EffectiveAt *time.Time          `json:"effectiveAt"`
}

// Catalog is GET /v1/insights: the types, schema versions, values and model versions served.
type Catalog struct {
	Insights []CatalogEntry `json:"insights"`
}

// CatalogEntry is one insight type of the catalog.
type CatalogEntry struct {
	Type               string         `json:"type"`
	SchemaVersions     []int          `json:"schemaVersions"`
	Values             []Value        `json:"values"`
	NewestModelVersion string         `json:"newestModelVersion,omitempty"`
	ModelVersions      []ModelVersion `json:"modelVersions"`
}

// ModelVersion is a model version of the catalog.
type ModelVersion struct {
	Version string             `json:"version"`
	Status  ModelVersionStatus `json:"status"`
	Current bool               `json:"current"`
}

// ModelVersionStatus says whether a model version may still be asked for.
type ModelVersionStatus string

const (
	ModelActive    ModelVersionStatus = "active"
	ModelWithdrawn ModelVersionStatus = "withdrawn"
)

// ModelVersionStatuses lists the statuses this client version knows.
var ModelVersionStatuses = []ModelVersionStatus{ModelActive, ModelWithdrawn}

// ReceiptHead is a signed tree head as GET /v1/receipts/heads lists it.
type ReceiptHead struct {
	Instance string `json:"instance"`
	// Tenant and Environment name the chain with Instance: the caller's own.
	Tenant      string  `json:"tenant"`
	Environment string  `json:"environment"`
	Sequence    int64   `json:"sequence"`
	Size        int64   `json:"size"`
	Root        string  `json:"root"`
	Previous    *string `json:"previous"`
	Time        int64   `json:"time"`
	Head        string  `json:"head"`
}

// ReceiptHeadList is a page of heads; Next, when set, is the `from` of the next page.
type ReceiptHeadList struct {
	Heads []ReceiptHead `json:"heads"`
	Next  string        `json:"next,omitempty"`
}

// TransparencyQuery is the body of POST /v1/subjects/transparency (one identifier kind).
type TransparencyQuery struct {
	Subject Subject `json:"subject"`
	Limit   int     `json:"limit,omitempty"`
	Cursor  string  `json:"cursor,omitempty"`
	Tenant  string  `json:"tenant,omitempty"`
}

// Transparency is a page of the evaluations that carried a subject, newest first.
type Transparency struct {
	Evaluations   []TransparencyEntry `json:"evaluations"`
	Cursor        string              `json:"cursor,omitempty"`
	Authorization *AuthorizationState `json:"authorization"`
}

// TransparencyEntry is one evaluation of a transparency answer.
type TransparencyEntry struct {
	EventID    string                `json:"eventId"`
	CreatedAt  time.Time             `json:"createdAt"`
	Category   OperationCategory     `json:"category"`
	CallerName *string               `json:"callerName"`
	Insights   []TransparencyInsight `json:"insights"`
	Decision   *DecisionAction       `json:"decision"`
}

// TransparencyInsight is an insight of a transparency entry: a value or an error code.
type TransparencyInsight struct {
	Type         string           `json:"type"`
	ModelVersion *string          `json:"modelVersion"`
	Value        Value            `json:"value,omitempty"`
	Error        InsightErrorCode `json:"error,omitempty"`
}

// ErasureRequest is the body of POST /v1/subjects/erasure.
type ErasureRequest struct {
	Subject Subject `json:"subject"`
	Tenant  string  `json:"tenant,omitempty"`
}

// ErasureResult counts what an erasure unlinked and deleted.
type ErasureResult struct {
	Tenant          string `json:"tenant"`
	Evaluations     int64  `json:"evaluations"`
	Authorizations  int64  `json:"authorizations"`
	TrainingVectors int64  `json:"trainingVectors"`
	HashKeys        int64  `json:"hashKeys"`
}
