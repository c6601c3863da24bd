package insight

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The eight leaves of Certificate Transparency's reference vectors (RFC 6962's
// merkle_tree_test, reused by RFC 9162's implementations) and the roots of their first n.
var vectorLeaves = [][]byte{{}, {0x00}, {0x10}, {0x20, 0x21}, {0x30, 0x31}, {0x40, 0x41, 0x42, 0x43},
	{0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57},
	{0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f}}

var vectorRoots = []string{
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
}

// mth and auditPath are RFC 9162 section 2.1.1 and 2.1.3.1 written out from the definition
// (split at the largest power of two below n), to produce the paths the verifier must accept.
func split(n int) int {
	k := 1
	for k*2 < n {
		k *= 2
	}
	return k
}

func mth(leaves [][]byte) []byte {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := split(len(leaves))
	return nodeHash(mth(leaves[:k]), mth(leaves[k:]))
}

func auditPath(m int, leaves [][]byte) [][]byte {
	if len(leaves) == 1 {
		return nil
	}
	k := split(len(leaves))
	if m < k {
		return append(auditPath(m, leaves[:k]), mth(leaves[k:]))
	}
	return append(auditPath(m-k, leaves[k:]), mth(leaves[:k]))
}

func hexes(list [][]byte) []string {
	out := []string{}
	for _, b := range list {
		out = append(out, hex.EncodeToString(b))
	}
	return out
}

func TestRootsAndPathsMatchTheReferenceVectors(t *testing.T) {
	var hashes [][]byte
	for _, l := range vectorLeaves {
		hashes = append(hashes, leafHash(l))
	}
	for n := 1; n <= 8; n++ {
		if got := hex.EncodeToString(mth(hashes[:n])); got != vectorRoots[n-1] {
			t.Fatalf("root of %d leaves: %s", n, got)
		}
	}
	want0 := []string{"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
		"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		"6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}
	want5 := []string{"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
		"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}
	for index, want := range map[int][]string{0: want0, 5: want5} {
		path := auditPath(index, hashes)
		if strings.Join(hexes(path), ",") != strings.Join(want, ",") {
			t.Fatalf("path of leaf %d: %v", index, hexes(path))
		}
		root, ok := rootFromAuditPath(hashes[index], int64(index), 8, path)
		if !ok || hex.EncodeToString(root) != vectorRoots[7] {
			t.Fatalf("leaf %d does not lead to the root", index)
		}
	}
}

func TestEveryPathVerifiesAndNothingAlteredDoes(t *testing.T) {
	for n := 1; n <= 33; n++ {
		var hashes [][]byte
		for i := 0; i < n; i++ {
			hashes = append(hashes, leafHash([]byte{byte(i), 7}))
		}
		root := mth(hashes)
		leads := func(path [][]byte, leaf []byte, index int) bool {
			got, ok := rootFromAuditPath(leaf, int64(index), int64(n), path)
			return ok && bytes.Equal(got, root)
		}
		for i := 0; i < n; i++ {
			path := auditPath(i, hashes)
			if !leads(path, hashes[i], i) {
				t.Fatalf("leaf %d of %d", i, n)
			}
			if n > 1 && (leads(path, hashes[(i+1)%n], i) || leads(path, hashes[i], (i+1)%n)) {
				t.Fatalf("another leaf or index of %d passes", n)
			}
			if len(path) > 1 {
				reversed := append([][]byte{}, path...)
				for a, b := 0, len(reversed)-1; a < b; a, b = a+1, b-1 {
					reversed[a], reversed[b] = reversed[b], reversed[a]
				}
				if leads(reversed, hashes[i], i) {
					t.Fatalf("a path in another order passes")
				}
			}
			if leads(append(append([][]byte{}, path...), root), hashes[i], i) {
				t.Fatalf("a path too long passes")
			}
			if _, ok := rootFromAuditPath(hashes[i], int64(n), int64(n), path); ok {
				t.Fatalf("an index outside the tree passes")
			}
		}
	}
}

// fixture is clients/testdata/receipts.json: answers of a live insightd and its JWKS.
type fixture struct {
	JWKS    string `json:"jwks"`
	Answers []struct {
		Body    string `json:"body"`
		Receipt string `json:"receipt"`
	} `json:"answers"`
}

func loadFixture(t *testing.T) (*fixture, *KeySet) {
	t.Helper()
	data, err := os.ReadFile("../testdata/receipts.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	keys, err := ParseKeySet([]byte(f.JWKS))
	if err != nil {
		t.Fatal(err)
	}
	return &f, keys
}

func mustFailReceipt(t *testing.T, what string, err error) {
	t.Helper()
	var re *ReceiptError
	if !errors.As(err, &re) {
		t.Fatalf("%s: want a ReceiptError, got %v", what, err)
	}
}

func TestLiveAnswersVerifyAndTamperedOnesDoNot(t *testing.T) {
	f, keys := loadFixture(t)
	longest := 0
	for i, a := range f.Answers {
		r, err := VerifyReceipt(keys, []byte(a.Body), a.Receipt)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if r.Tenant != "default" || r.Environment != Sandbox || r.KeyID != keys.KeyIDs()[0] {
			t.Fatalf("answer %d: scope %s %s key %s", i, r.Tenant, r.Environment, r.KeyID)
		}
		if len(r.Path) > longest {
			longest = len(r.Path)
		}
		tampered := strings.Replace(a.Body, `"sandbox"`, `"production"`, 1)
		_, err = VerifyReceipt(keys, []byte(tampered), a.Receipt)
		mustFailReceipt(t, "a tampered body", err)
		_, err = VerifyReceipt(keys, []byte(a.Body+" "), a.Receipt)
		mustFailReceipt(t, "a byte added", err)
	}
	if longest < 2 {
		t.Fatalf("the fixture should hold audit paths of 2 hashes")
	}
	// Another answer's receipt, and a signature of another head.
	_, err := VerifyReceipt(keys, []byte(f.Answers[0].Body), f.Answers[len(f.Answers)-1].Receipt)
	mustFailReceipt(t, "another answer's receipt", err)
	first := f.Answers[0].Receipt
	last := f.Answers[len(f.Answers)-1].Receipt
	sig := func(receipt string) string {
		head := strings.Split(receipt, `"`)[1]
		return head[strings.LastIndex(head, ".")+1:]
	}
	forged := strings.Replace(first, sig(first), sig(last), 1)
	_, err = VerifyReceipt(keys, []byte(f.Answers[0].Body), forged)
	mustFailReceipt(t, "another head's signature", err)
	empty, _ := ParseKeySet([]byte(`{"keys":[]}`))
	_, err = VerifyReceipt(empty, []byte(f.Answers[0].Body), first)
	mustFailReceipt(t, "an unknown kid", err)
}

func TestPathsSwappedBetweenLeavesFail(t *testing.T) {
	f, keys := loadFixture(t)
	for _, a := range f.Answers {
		if !strings.Contains(a.Receipt, "index=1") || !strings.Contains(a.Receipt, ": :") {
			continue
		}
		moved := strings.Replace(a.Receipt, "index=1", "index=0", 1)
		_, err := VerifyReceipt(keys, []byte(a.Body), moved)
		mustFailReceipt(t, "another index", err)
		open := strings.Index(a.Receipt, "(")
		close := strings.Index(a.Receipt, ")")
		items := strings.Fields(a.Receipt[open+1 : close])
		swapped := a.Receipt[:open+1] + items[1] + " " + items[0] + a.Receipt[close:]
		_, err = VerifyReceipt(keys, []byte(a.Body), swapped)
		mustFailReceipt(t, "a path in another order", err)
		return
	}
	t.Fatal("no answer with index 1 and a path of two hashes in the fixture")
}

func TestKeySetRefusesAKidThatIsNotTheThumbprint(t *testing.T) {
	f, _ := loadFixture(t)
	var doc map[string][]map[string]string
	_ = json.Unmarshal([]byte(f.JWKS), &doc)
	doc["keys"][0]["kid"] = strings.Repeat("A", 43)
	bad, _ := json.Marshal(doc)
	if _, err := ParseKeySet(bad); err == nil {
		t.Fatal("a kid that is not the key's thumbprint was accepted")
	}
}

func TestReceiptHeaderParsing(t *testing.T) {
	good := `head="a.b.c", index=3, path=(:AAAA: :AQID:)`
	r, err := parseReceiptHeader(good)
	if err != nil || r.head != "a.b.c" || r.index != 3 || len(r.path) != 2 || !bytes.Equal(r.path[1], []byte{1, 2, 3}) {
		t.Fatalf("%v %+v", err, r)
	}
	if r, err := parseReceiptHeader(`path=(), later=?1, index=0,head="x"`); err != nil || r.head != "x" || len(r.path) != 0 {
		t.Fatalf("members in another order or unknown: %v", err)
	}
	for _, bad := range []string{"", `head="a.b.c", index=3`, `head="a.b.c", index=3, path=(:AAAA:),`,
		`head=a.b.c, index=3, path=()`, `head="a.b.c", index=x, path=()`, `head="a.b.c", index=3, path=(:-_8=:)`,
		`head="a.b.c", index=3, path=(:AAAA::AAAA:)`, `head="a.b.c" index=3, path=()`, `Head="a", index=3, path=()`,
		`head="a.b.c", index=1234567890123456, path=()`, `head="a.b.c", index=3, path=(:AB==:)`} {
		if _, err := parseReceiptHeader(bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
}

func TestChainAndScopeChecks(t *testing.T) {
	f, keys := loadFixture(t)
	v := &receiptVerifier{keys: keys, newest: map[string]*Receipt{}}
	var receipts []*Receipt
	for _, a := range f.Answers {
		r, _ := VerifyReceipt(keys, []byte(a.Body), a.Receipt)
		if err := v.checkChain(r); err != nil {
			t.Fatalf("heads in order: %v", err)
		}
		if err := v.checkScope(r); err != nil {
			t.Fatal(err)
		}
		receipts = append(receipts, r)
	}
	// A head whose previous is not the newest head's hash, and a second head of one sequence.
	last := *receipts[len(receipts)-1]
	next := last
	next.Sequence, next.Previous, next.Head = last.Sequence+1, make([]byte, 32), "x.y.z"
	if err := v.checkChain(&next); err == nil {
		t.Fatal("a forged previous passed")
	}
	older := last
	older.Sequence, older.Previous, older.Head, older.Time = last.Sequence+1, last.HeadHash(), "x.y.z", last.Time-1
	if err := v.checkChain(&older); err == nil {
		t.Fatal("a successor older than its predecessor passed")
	}
	fork := last
	fork.Head = "x.y.z"
	if err := v.checkChain(&fork); err == nil {
		t.Fatal("a forked chain passed")
	}
	other := last
	other.Tenant = "other"
	mustFailReceipt(t, "another tenant", v.checkScope(&other))
	expecting := &receiptVerifier{environment: Production}
	mustFailReceipt(t, "another environment", expecting.checkScope(receipts[0]))
}

// The worked example of docs/api.md ("Verifying a receipt"): three answers of tenant acme in
// production committed together, signed by the key of RFC 8032's first test vector; the head
// names their tenant and environment.
func TestTheWorkedExampleOfTheAPIDocumentVerifies(t *testing.T) {
	keys, err := ParseKeySet([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","use":"sig","alg":"EdDSA"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	head := "eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ." +
		"eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwidGVuYW50IjoiYWNtZSIsImVudmlyb25tZW50IjoicHJvZHVjdGlvbiIsInNlcXVlbmNlIjo0MSwic2l6ZSI6Mywicm9vdCI6IkJnNHlVc0dBMnJuSlZSZDFYc3hSWUlYcFEyaVZaUUNtYWNvek1oR1E4ZmciLCJwcmV2aW91cyI6InhnTndmclZBQ1FJSlNFSjFGaFEyZTJfcmNIZmhPQW5qSk92ZUJBc2lSRlEiLCJ0aW1lIjoxNzk2NTIyNjY0MTA3fQ." +
		"KdOFJdic-IhJDjarlaNxyFTAnwj6F0zzY8CkaTQCpQenbmdqfAfAORt7z-gaUWyGuOdDX6iFpbqE-TkNfJk8BA"
	leaves := []struct{ body, path, tenant string }{
		{`{"eventId":"e0","tenant":"acme","environment":"production"}`, `:plzHCViWaOdFSLKqrngt79Gv9E5p+tujoU0mPtJT6CE=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:`, "acme"},
		{`{"eventId":"e1","tenant":"acme","environment":"production"}`, `:O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:`, "acme"},
		{`{"eventId":"e2","tenant":"acme","environment":"production"}`, `:jGH9Soqq6cb7j2GEQ3H+lt2tO0+5JTRHVVAqHakFzY4=:`, "acme"},
	}
	for i, leaf := range leaves {
		receipt := fmt.Sprintf(`head="%s", index=%d, path=(%s)`, head, i, leaf.path)
		r, err := VerifyReceipt(keys, []byte(leaf.body), receipt)
		if err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
		if r.Instance != "web-1-4f2a9c01" || r.Sequence != 41 || r.Size != 3 || r.Tenant != leaf.tenant ||
			r.HeadTenant != "acme" || r.HeadEnvironment != "production" ||
			r.KeyID != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
			t.Fatalf("leaf %d: %+v", i, r)
		}
		other := fmt.Sprintf(`head="%s", index=%d, path=(%s)`, head, (i+1)%3, leaf.path)
		_, err = VerifyReceipt(keys, []byte(leaf.body), other)
		mustFailReceipt(t, "another index", err)
	}
}

// The worked example docs/api.md gave before heads were kept per tenant: one tree of several
// tenants' answers, a head of no tenant, which still verifies.
func TestAHeadOfNoTenantStillVerifies(t *testing.T) {
	keys, err := ParseKeySet([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","use":"sig","alg":"EdDSA"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	head := "eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ." +
		"eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwic2VxdWVuY2UiOjQxLCJzaXplIjozLCJyb290IjoiQzBnZ2J4Z1lmdEt3dWd6TWFzNHE3WFlFbEotSUlTU3FqNkxBNXMyRWtEQSIsInByZXZpb3VzIjoieGdOd2ZyVkFDUUlKU0VKMUZoUTJlMl9yY0hmaE9BbmpKT3ZlQkFzaVJGUSIsInRpbWUiOjE3OTY1MjI2NjQxMDd9." +
		"MOU2PIvMci1x5_Yzf5DTmAqfLrpf788-BfQYDDuqMNVEim3hyRXSESsX2vOkjRKe6_TMqPk0QJiCtLjrK7ZrAQ"
	leaves := []struct{ body, path, tenant string }{
		{`{"eventId":"e0","tenant":"acme","environment":"production"}`, `:Euu5lAAHET5Atm1jyvmGifWaaHH8KNyW6jnBaHnS6Oc=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:`, "acme"},
		{`{"eventId":"e1","tenant":"acme","environment":"sandbox"}`, `:O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:`, "acme"},
		{`{"eventId":"e2","tenant":"globex","environment":"production"}`, `:WKaG4afrKIlvzCaW/UV0mM+GlPRiFF5aNIz+0H5yqBA=:`, "globex"},
	}
	for i, leaf := range leaves {
		receipt := fmt.Sprintf(`head="%s", index=%d, path=(%s)`, head, i, leaf.path)
		r, err := VerifyReceipt(keys, []byte(leaf.body), receipt)
		if err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
		if r.Instance != "web-1-4f2a9c01" || r.Sequence != 41 || r.Size != 3 || r.Tenant != leaf.tenant || r.HeadTenant != "" ||
			r.KeyID != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
			t.Fatalf("leaf %d: %+v", i, r)
		}
		other := fmt.Sprintf(`head="%s", index=%d, path=(%s)`, head, (i+1)%3, leaf.path)
		_, err = VerifyReceipt(keys, []byte(leaf.body), other)
		mustFailReceipt(t, "another index", err)
	}
}
