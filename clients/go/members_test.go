package insight

import (
	"encoding/json"
	"errors"
	"testing"
)

// The web kit's object, as InsightCapture's session.finish() returns it.
const kitObject = `{"events": [{"t": 0, "type": "sessionStart"}, {"t": 900, "type": "submit"}], "source": {"kit": "insight-capture-web", "version": "1.0.0", "platform": "web"}}`

const requestHead = `{"operationCategory": "payment", "insights": [{"type": "isLikelyBeingCoached", "schemaVersion": 1}], `

func unknownMember(t *testing.T, data string, into interface{}) *UnknownMemberError {
	t.Helper()
	var memberErr *UnknownMemberError
	if err := json.Unmarshal([]byte(data), into); !errors.As(err, &memberErr) {
		t.Fatalf("decoding %s: want an UnknownMemberError, got %v", data, err)
	}
	return memberErr
}

func TestKitObjectWrappedTwiceIsRefusedByItsPath(t *testing.T) {
	var req EvaluationRequest
	if got := unknownMember(t, requestHead+`"interaction": {"interaction": `+kitObject+`}}`, &req).Path; got != "interaction.interaction" {
		t.Fatalf("path %q", got)
	}
	var interaction Interaction
	err := unknownMember(t, `{"interaction": `+kitObject+`}`, &interaction)
	if err.Path != "interaction.interaction" || err.Error() != "insightd: unknown member interaction.interaction: Interaction has device, events, source, summary" {
		t.Fatalf("%v", err)
	}
}

func TestMisspeltMemberIsRefusedByItsPath(t *testing.T) {
	var req EvaluationRequest
	if got := unknownMember(t, requestHead+`"transaction": {"newCounterParty": true}}`, &req).Path; got != "transaction.newCounterParty" {
		t.Fatalf("path %q", got)
	}
	if got := unknownMember(t, requestHead+`"interaction": {"events": [{"t": 0, "type": "sessionStart", "x": 1}]}}`, &req).Path; got != "interaction.events[0].x" {
		t.Fatalf("path %q", got)
	}
}

func TestKitObjectForwardedUnchangedDecodesWhole(t *testing.T) {
	var interaction Interaction
	if err := json.Unmarshal([]byte(kitObject), &interaction); err != nil {
		t.Fatal(err)
	}
	if len(interaction.Events) != 2 || interaction.Source == nil || interaction.Source.Platform != "web" {
		t.Fatalf("%+v", interaction)
	}
	var req EvaluationRequest
	if err := json.Unmarshal([]byte(requestHead+`"interaction": `+kitObject+`}`), &req); err != nil || req.Interaction == nil || len(req.Interaction.Events) != 2 {
		t.Fatalf("%v %+v", err, req)
	}
}
