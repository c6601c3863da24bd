package insight

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// rekeyer is the proxy of clients/conformance/tamper_proxy.py --rekey: a key of its own, a JWKS
// of that key, and answers it changed and signed (a one-leaf tree) with it.
type rekeyer struct {
	private ed25519.PrivateKey
	kid     string
	jwk     string
}

func newRekeyer() *rekeyer {
	public, private, _ := ed25519.GenerateKey(nil)
	x := base64.RawURLEncoding.EncodeToString(public)
	kid := thumbprint(x)
	return &rekeyer{private: private, kid: kid,
		jwk: `{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"` + kid + `","use":"sig","alg":"EdDSA"}`}
}

func (r *rekeyer) jwks(others ...string) string {
	return `{"keys":[` + strings.Join(append(others, r.jwk), ",") + `]}`
}

// sign makes body a tree of one leaf whose head — the payload of a real head (every member the
// daemon writes), with instance, sequence, size, root and previous its own — r signs.
func (r *rekeyer) sign(t *testing.T, f *fixture, body, instance string) (string, string) {
	enc := base64.RawURLEncoding.EncodeToString
	real, err := base64.RawURLEncoding.DecodeString(strings.Split(strings.Split(f.Answers[0].Receipt, `"`)[1], ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	decoder := json.NewDecoder(bytes.NewReader(real))
	decoder.UseNumber()
	var members map[string]interface{}
	if err := decoder.Decode(&members); err != nil {
		t.Fatal(err)
	}
	root := sha256.Sum256(append([]byte{0}, body...))
	members["instance"], members["sequence"], members["size"], members["root"], members["previous"] = instance, 0, 1, enc(root[:]), nil
	encoded, err := json.Marshal(members)
	if err != nil {
		t.Fatal(err)
	}
	header := enc([]byte(`{"alg":"EdDSA","kid":"` + r.kid + `"}`))
	payload := enc(encoded)
	signature := enc(ed25519.Sign(r.private, []byte(header+"."+payload)))
	return body, fmt.Sprintf(`head="%s.%s.%s", index=0, path=()`, header, payload, signature)
}

// fixtureJWK is the one key of the fixture's JWKS, as a JSON object.
func fixtureJWK(f *fixture) string {
	return strings.TrimSuffix(strings.TrimPrefix(f.JWKS, `{"keys":[`), `]}`)
}

func pinnedClient(t *testing.T, url string, opts Options) *Client {
	opts.BaseURL, opts.APIKey, opts.Retry, opts.Timeout = url, "ik_test", &NoRetries, 2*time.Second
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A proxy that serves its own key set and re-signs the answer it downgraded: a client without
// pins accepts it; one that pins insightd's keys (its ids or the keys) refuses it, without
// fetching the proxy's set, and still accepts insightd's answers.
func TestPinnedKeysRefuseAProxysOwnKeySet(t *testing.T) {
	f, keys := loadFixture(t)
	proxy := newRekeyer()
	rs, server := newReplayServer(t, proxy.jwks())
	a := f.Answers[0]
	downgraded := strings.Replace(a.Body, `"proceed"`, `"block"`, 1)

	unpinned := pinnedClient(t, server.URL, Options{})
	rs.then(answer(proxy.sign(t, f, downgraded, "proxy")))
	if ev, err := unpinned.Evaluate(context.Background(), requestOf(t, a.Body)); err != nil || ev.Receipt.KeyID != proxy.kid {
		t.Fatalf("without pins the served key set is trusted: %v", err)
	}

	kid := keys.KeyIDs()[0]
	for name, opts := range map[string]Options{"ids": {PinnedKeyIDs: []string{kid}}, "keys": {PinnedKeys: keys}} {
		client := pinnedClient(t, server.URL, opts)
		gets := len(rs.keyGets)
		rs.then(answer(proxy.sign(t, f, downgraded, "proxy")))
		_, err := client.Evaluate(context.Background(), requestOf(t, a.Body))
		mustFailReceipt(t, name, err)
		if want := "key " + proxy.kid + " is not pinned (pinned: " + kid + ")"; !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: want %q, got %v", name, want, err)
		}
		if len(rs.keyGets) != gets {
			t.Fatalf("%s: an unpinned kid is refused without a fetch", name)
		}
	}

	// insightd's answer: pinned keys need no fetch (the proxy's set is still served)...
	gets := len(rs.keyGets)
	rs.then(answer(a.Body, a.Receipt))
	if _, err := pinnedClient(t, server.URL, Options{PinnedKeys: keys}).Evaluate(context.Background(), requestOf(t, a.Body)); err != nil {
		t.Fatal(err)
	}
	// ...pinned ids are fetched: only the pinned ones of the set served are kept.
	rs.mu.Lock()
	rs.jwks, rs.etag = proxy.jwks(fixtureJWK(f)), `"both"`
	rs.mu.Unlock()
	client := pinnedClient(t, server.URL, Options{PinnedKeyIDs: []string{kid}})
	rs.then(answer(a.Body, a.Receipt))
	if _, err := client.Evaluate(context.Background(), requestOf(t, a.Body)); err != nil {
		t.Fatal(err)
	}
	if len(rs.keyGets) != gets+1 || len(client.verifier.keys.keys) != 1 {
		t.Fatalf("want one fetch and the pinned key kept, got %d fetches, %v", len(rs.keyGets)-gets, client.verifier.keys.KeyIDs())
	}
}

// A rotation: the key published ahead, pinned beside the current one, verifies once it signs;
// another key of the same set does not. AllowUnpinnedKeys accepts it.
func TestPinnedNextKeyAcrossARotation(t *testing.T) {
	f, keys := loadFixture(t)
	next, other := newRekeyer(), newRekeyer()
	rs, server := newReplayServer(t, `{"keys":[`+fixtureJWK(f)+`,`+next.jwk+`,`+other.jwk+`]}`)
	client := pinnedClient(t, server.URL, Options{PinnedKeyIDs: []string{keys.KeyIDs()[0], next.kid}})
	a := f.Answers[0]
	rs.then(answer(a.Body, a.Receipt), answer(next.sign(t, f, a.Body, "next")), answer(other.sign(t, f, a.Body, "other")))
	for i, want := range []string{keys.KeyIDs()[0], next.kid} {
		ev, err := client.Evaluate(context.Background(), requestOf(t, a.Body))
		if err != nil || ev.Receipt.KeyID != want {
			t.Fatalf("answer %d: want key %s, got %v", i, want, err)
		}
	}
	_, err := client.Evaluate(context.Background(), requestOf(t, a.Body))
	mustFailReceipt(t, "a key not pinned", err)

	lenient := pinnedClient(t, server.URL, Options{PinnedKeyIDs: []string{keys.KeyIDs()[0]}, AllowUnpinnedKeys: true})
	rs.then(answer(other.sign(t, f, a.Body, "other")))
	if ev, err := lenient.Evaluate(context.Background(), requestOf(t, a.Body)); err != nil || ev.Receipt.KeyID != other.kid {
		t.Fatalf("AllowUnpinnedKeys: %v", err)
	}

	if _, err := New(Options{BaseURL: server.URL, PinnedKeyIDs: []string{}}); err == nil {
		t.Fatal("an empty pin list must be refused")
	}
}
