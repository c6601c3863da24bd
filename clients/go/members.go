package insight

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The members of each request schema of openapi/openapi.json (every one is closed:
// additionalProperties false) and, for a member that is an object (or an array of objects,
// "[]"), its schema. encoding/json drops a member a struct lacks without a word, so the kit's
// object decoded into an Interaction or EvaluationRequest would lose a misspelt member, or all of
// itself when wrapped once too often ({"interaction": {"interaction": …}}), and be answered
// "unknown". The request types' UnmarshalJSON refuse such a member instead, naming its path.
// Answers are decoded tolerantly: a member a later insightd adds must not break this client.
var requestMembers = map[string]map[string]string{
	"EvaluationRequest": {"requestId": "", "operationCategory": "", "insights": "InsightRequest[]", "subject": "Subject",
		"interaction": "Interaction", "transaction": "Transaction", "initiator": "Initiator"},
	"InsightRequest": {"type": "", "schemaVersion": "", "modelVersion": ""},
	"Subject":        {"account": "", "device": "", "counterparty": ""},
	// summary's feature names are insightd's to judge (422 naming the feature).
	"Interaction":       {"events": "InteractionEvent[]", "summary": "", "device": "DeviceFacts", "source": "InteractionSource"},
	"InteractionEvent":  {"t": "", "type": "", "field": ""},
	"DeviceFacts":       {"activeCall": "", "callStartedBeforeSession": "", "screenSharing": "", "remoteAccessApp": ""},
	"InteractionSource": {"kit": "", "version": "", "platform": "", "droppedEvents": ""},
	"Transaction":       {"newCounterparty": "", "amountBand": ""},
	"Initiator":         {"kind": "", "agent": "AgentFacts"},
	"AgentFacts":        {"userRequested": "", "untrustedContext": "", "argumentsFromUntrustedContext": "", "sideEffects": ""},
}

// RequestMembers returns the member names of each request schema the client checks what it
// decodes against (for tooling: clients/conformance/check_openapi.py compares them with openapi/).
func RequestMembers() map[string][]string {
	out := map[string][]string{}
	for schema, members := range requestMembers {
		for name := range members {
			out[schema] = append(out[schema], name)
		}
		sort.Strings(out[schema])
	}
	return out
}

// UnknownMemberError is a request decoded from JSON (json.Unmarshal into an EvaluationRequest or
// an Interaction) with a member its schema lacks: Path names it in the request body
// ("interaction.interaction": the kit's object wrapped once too often;
// "transaction.newCounterParty": a misspelt name). Nothing was sent.
type UnknownMemberError struct {
	Path    string   // the member, from the request body's root
	Schema  string   // the schema that lacks it
	Members []string // the members the schema has
}

func (e *UnknownMemberError) Error() string {
	return fmt.Sprintf("insightd: unknown member %s: %s has %s", e.Path, e.Schema, strings.Join(e.Members, ", "))
}

// checkMembers returns an *UnknownMemberError for the first member of value (parsed JSON, at
// path) that schema lacks. A value of another JSON type is left to the decoder (a type error).
func checkMembers(value interface{}, schema, path string) error {
	if strings.HasSuffix(schema, "[]") {
		item := strings.TrimSuffix(schema, "[]")
		list, _ := value.([]interface{})
		for i, entry := range list {
			if err := checkMembers(entry, item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	object, ok := value.(map[string]interface{})
	if !ok {
		return nil
	}
	members := requestMembers[schema]
	names := make([]string, 0, len(object))
	for name := range object {
		names = append(names, name)
	}
	sort.Strings(names) // the same member is named first on every run
	for _, name := range names {
		at := name
		if path != "" {
			at = path + "." + name
		}
		child, known := members[name]
		if !known {
			declared := make([]string, 0, len(members))
			for member := range members {
				declared = append(declared, member)
			}
			sort.Strings(declared)
			return &UnknownMemberError{Path: at, Schema: schema, Members: declared}
		}
		if child != "" {
			if err := checkMembers(object[name], child, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkedJSON checks data's members against schema (rooted at path) before it is decoded.
func checkedJSON(data []byte, schema, path string) error {
	var value interface{}
	if err := json.Unmarshal(data, &value); err != nil {
		return err
	}
	return checkMembers(value, schema, path)
}

// UnmarshalJSON decodes a request written as JSON, refusing a member the API lacks
// (*UnknownMemberError).
func (r *EvaluationRequest) UnmarshalJSON(data []byte) error {
	if err := checkedJSON(data, "EvaluationRequest", ""); err != nil {
		return err
	}
	type plain EvaluationRequest
	return json.Unmarshal(data, (*plain)(r))
}

// UnmarshalJSON decodes an interaction, e.g. the capture kit's object forwarded unchanged,
// refusing a member the API lacks (*UnknownMemberError, its Path rooted at "interaction").
func (i *Interaction) UnmarshalJSON(data []byte) error {
	if err := checkedJSON(data, "Interaction", "interaction"); err != nil {
		return err
	}
	type plain Interaction
	return json.Unmarshal(data, (*plain)(i))
}
