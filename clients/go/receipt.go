package insight

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Receipt is the verified proof that insightd gave an answer: the Insight-Receipt of a 200 of
// POST /v1/evaluations. The answers the service commits together are the leaves of an RFC 9162
// Merkle tree whose head is signed once (JWS, EdDSA); the receipt gives the answer's place in
// the tree and the hashes that lead from it to the signed root (docs/api.md, "Receipts").
// Keep Header and the answer's Body with the transaction: with the JWKS of that time, they
// prove the answer (VerifyReceipt).
type Receipt struct {
	Header   string // the Insight-Receipt header, as received
	Head     string // the signed head, a JWS compact serialization
	KeyID    string // the key that signed the head
	Instance string // the instance whose chain of heads the head extends
	// HeadTenant and HeadEnvironment name the chain with Instance: the body's tenant and
	// environment; both "" for a head made before heads were kept per tenant.
	HeadTenant      string
	HeadEnvironment string
	Sequence        int64  // the head's position in that chain
	Size            int64  // answers in the head's tree
	Root            []byte // the tree's root hash
	Previous        []byte // SHA-256 of the chain's previous head; nil for its first
	Time            int64  // when the head was made, Unix milliseconds
	Index           int64  // the answer's leaf index
	Path            [][]byte
	// Tenant and Environment are those the body names, which the receipt therefore binds.
	Tenant      string
	Environment Environment
}

// HeadHash is SHA-256 of the head's serialization: the next head's Previous.
func (r *Receipt) HeadHash() []byte {
	sum := sha256.Sum256([]byte(r.Head))
	return sum[:]
}

// KeySet is the Ed25519 keys of a JWKS (GET /v1/signing-keys) that verify receipts' heads.
type KeySet struct {
	keys map[string]ed25519.PublicKey
}

// ParseKeySet reads a JWKS document. Keys other than Ed25519 signing keys are ignored; an
// Ed25519 key whose kid is not its RFC 7638 thumbprint is refused.
func ParseKeySet(jwks []byte) (*KeySet, error) {
	var doc struct {
		Keys []struct {
			Kty, Crv, X, Kid, Use, Alg string
		} `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &doc); err != nil {
		return nil, &UnexpectedResponseError{Detail: "the JWKS is not JSON: " + err.Error()}
	}
	set := &KeySet{keys: map[string]ed25519.PublicKey{}}
	for _, k := range doc.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Use != "" && k.Use != "sig") || (k.Alg != "" && k.Alg != "EdDSA") {
			continue
		}
		x, err := b64url(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize || k.Kid == "" {
			return nil, &UnexpectedResponseError{Detail: "the JWKS holds an Ed25519 key without a kid or a valid x"}
		}
		if thumbprint(k.X) != k.Kid {
			return nil, &UnexpectedResponseError{Detail: "kid " + k.Kid + " is not the RFC 7638 thumbprint of its key"}
		}
		set.keys[k.Kid] = ed25519.PublicKey(x)
	}
	return set, nil
}

// KeyIDs lists the usable keys' ids, sorted.
func (s *KeySet) KeyIDs() []string {
	ids := make([]string, 0, len(s.keys))
	for id := range s.keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// thumbprint is the RFC 7638 thumbprint of an Ed25519 JWK: SHA-256 of its required members in
// lexicographic order, without whitespace.
func thumbprint(x string) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// VerifyReceipt checks that receipt (an Insight-Receipt) proves body under a key of keys: the
// head's signature, then the body's leaf through the audit path to the head's root. It
// returns the proof, or a *ReceiptError.
func VerifyReceipt(keys *KeySet, body []byte, receipt string) (*Receipt, error) {
	parsed, err := parseReceiptHeader(receipt)
	if err != nil {
		return nil, err
	}
	jws, err := parseHeadJWS(parsed.head)
	if err != nil {
		return nil, err
	}
	key, ok := keys.keys[jws.kid]
	if !ok {
		return nil, &ReceiptError{Detail: "key " + jws.kid + " is not in the service's JWKS"}
	}
	if !ed25519.Verify(key, jws.signingInput, jws.signature) {
		return nil, &ReceiptError{Detail: "the head's signature does not verify (key " + jws.kid + ")"}
	}
	head, err := jws.head()
	if err != nil {
		return nil, err
	}
	root, ok := rootFromAuditPath(leafHash(body), parsed.index, head.size, parsed.path)
	if !ok || !bytes.Equal(root, head.root) {
		return nil, &ReceiptError{Detail: "the body and the audit path do not lead to the signed root"}
	}
	var scope struct {
		Tenant      *string `json:"tenant"`
		Environment *string `json:"environment"`
	}
	if json.Unmarshal(body, &scope) != nil || scope.Tenant == nil || scope.Environment == nil {
		return nil, &ReceiptError{Detail: "the answer names no tenant and environment"}
	}
	if head.tenant != "" && (head.tenant != *scope.Tenant || head.environment != *scope.Environment) {
		return nil, &ReceiptError{Detail: fmt.Sprintf("the head is tenant %s's in %s, not the answer's", head.tenant, head.environment)}
	}
	return &Receipt{Header: receipt, Head: parsed.head, KeyID: jws.kid, Instance: head.instance,
		HeadTenant: head.tenant, HeadEnvironment: head.environment, Sequence: head.sequence,
		Size: head.size, Root: head.root, Previous: head.previous, Time: head.time, Index: parsed.index, Path: parsed.path,
		Tenant: *scope.Tenant, Environment: Environment(*scope.Environment)}, nil
}

// leafHash is RFC 9162's hash of a leaf: SHA-256(0x00 || data).
func leafHash(data []byte) []byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum(nil)
}

func nodeHash(left, right []byte) []byte {
	h := sha256.New()
	h.Write([]byte{1})
	h.Write(left)
	h.Write(right)
	return h.Sum(nil)
}

// rootFromAuditPath is RFC 9162 section 2.1.3.2: the root an inclusion proof leads to.
func rootFromAuditPath(leaf []byte, index, size int64, path [][]byte) ([]byte, bool) {
	if index < 0 || index >= size {
		return nil, false
	}
	fn, sn, r := index, size-1, leaf
	for _, p := range path {
		if sn == 0 || len(p) != sha256.Size {
			return nil, false
		}
		if fn&1 == 1 || fn == sn {
			r = nodeHash(p, r)
			if fn&1 == 0 {
				for fn&1 == 0 && fn != 0 {
					fn >>= 1
					sn >>= 1
				}
			}
		} else {
			r = nodeHash(r, p)
		}
		fn >>= 1
		sn >>= 1
	}
	return r, sn == 0
}

type receiptHeader struct {
	head  string
	index int64
	path  [][]byte
}

// parseReceiptHeader reads the RFC 8941 dictionary `head="…", index=n, path=(:…: …)`
// strictly; members a later service may add are skipped.
func parseReceiptHeader(text string) (*receiptHeader, error) {
	malformed := func(what string) error {
		return &ReceiptError{Detail: "Insight-Receipt is not an RFC 8941 dictionary (" + what + ")"}
	}
	s := &scanner{text: text}
	s.skip(" ")
	var out receiptHeader
	var seen = map[string]bool{}
	for !s.atEnd() {
		key := s.key()
		if key == "" || !s.take('=') {
			return nil, malformed("a member's key")
		}
		var ok bool
		switch key {
		case "head":
			out.head, ok = s.str()
		case "index":
			out.index, ok = s.integer()
		case "path":
			out.path, ok = s.byteSequences()
		default:
			ok = s.skipBareItem()
		}
		if !ok {
			return nil, malformed("member " + key)
		}
		seen[key] = true
		s.skip(" \t")
		if s.atEnd() {
			break
		}
		if !s.take(',') {
			return nil, malformed("the separator after " + key)
		}
		s.skip(" \t")
		if s.atEnd() {
			return nil, malformed("a trailing comma")
		}
	}
	if !seen["head"] || !seen["index"] || !seen["path"] {
		return nil, &ReceiptError{Detail: "Insight-Receipt lacks head, index or path"}
	}
	return &out, nil
}

type scanner struct {
	text string
	at   int
}

func (s *scanner) atEnd() bool { return s.at == len(s.text) }

func (s *scanner) take(c byte) bool {
	if s.at < len(s.text) && s.text[s.at] == c {
		s.at++
		return true
	}
	return false
}

func (s *scanner) skip(set string) {
	for s.at < len(s.text) && strings.IndexByte(set, s.text[s.at]) >= 0 {
		s.at++
	}
}

func (s *scanner) key() string {
	start := s.at
	if s.at < len(s.text) && (s.text[s.at] >= 'a' && s.text[s.at] <= 'z' || s.text[s.at] == '*') {
		s.at++
		for s.at < len(s.text) {
			c := s.text[s.at]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_-.*", c) >= 0) {
				break
			}
			s.at++
		}
	}
	return s.text[start:s.at]
}

func (s *scanner) str() (string, bool) {
	if !s.take('"') {
		return "", false
	}
	var out strings.Builder
	for s.at < len(s.text) {
		c := s.text[s.at]
		s.at++
		switch {
		case c == '\\':
			if s.at >= len(s.text) || (s.text[s.at] != '"' && s.text[s.at] != '\\') {
				return "", false
			}
			out.WriteByte(s.text[s.at])
			s.at++
		case c == '"':
			return out.String(), true
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			out.WriteByte(c)
		}
	}
	return "", false
}

func (s *scanner) integer() (int64, bool) {
	start := s.at
	s.take('-')
	digits := s.at
	for s.at < len(s.text) && s.text[s.at] >= '0' && s.text[s.at] <= '9' {
		s.at++
	}
	if s.at == digits || s.at-digits > 15 {
		return 0, false
	}
	n, err := strconv.ParseInt(s.text[start:s.at], 10, 64)
	return n, err == nil
}

func (s *scanner) byteSequence() ([]byte, bool) {
	if !s.take(':') {
		return nil, false
	}
	end := strings.IndexByte(s.text[s.at:], ':')
	if end < 0 {
		return nil, false
	}
	decoded, err := base64.StdEncoding.Strict().DecodeString(s.text[s.at : s.at+end])
	s.at += end + 1
	return decoded, err == nil
}

func (s *scanner) byteSequences() ([][]byte, bool) {
	if !s.take('(') {
		return nil, false
	}
	out := [][]byte{}
	s.skip(" ")
	for !s.take(')') {
		item, ok := s.byteSequence()
		if !ok || s.atEnd() || (s.text[s.at] != ' ' && s.text[s.at] != ')') {
			return nil, false
		}
		out = append(out, item)
		s.skip(" ")
	}
	return out, true
}

// skipBareItem skips another member's value: a string, a byte sequence, an inner list, or a
// token or number.
func (s *scanner) skipBareItem() bool {
	if s.atEnd() {
		return false
	}
	switch s.text[s.at] {
	case '"':
		_, ok := s.str()
		return ok
	case ':':
		_, ok := s.byteSequence()
		return ok
	case '(':
		end := strings.IndexByte(s.text[s.at:], ')')
		if end < 0 {
			return false
		}
		s.at += end + 1
		return true
	default:
		start := s.at
		for s.at < len(s.text) && s.text[s.at] != ',' && s.text[s.at] != ' ' {
			s.at++
		}
		return s.at > start
	}
}

type headJWS struct {
	kid          string
	signature    []byte
	signingInput []byte
	payload      []byte
}

// parseHeadJWS reads a head's JWS compact serialization: alg EdDSA, a kid, no crit.
func parseHeadJWS(text string) (*headJWS, error) {
	parts := strings.Split(text, ".")
	if len(parts) != 3 || parts[1] == "" {
		return nil, &ReceiptError{Detail: "the receipt's head is not a JWS compact serialization"}
	}
	headerBytes, err := b64url(parts[0])
	var header map[string]interface{}
	if err != nil || json.Unmarshal(headerBytes, &header) != nil {
		return nil, &ReceiptError{Detail: "the JWS header is not base64url JSON"}
	}
	if header["alg"] != "EdDSA" {
		return nil, &ReceiptError{Detail: "the JWS alg is not EdDSA"}
	}
	// RFC 7515 section 4.1.11: a critical extension this verifier does not know must fail.
	if _, crit := header["crit"]; crit {
		return nil, &ReceiptError{Detail: "the JWS header names critical extensions"}
	}
	kid, _ := header["kid"].(string)
	if kid == "" {
		return nil, &ReceiptError{Detail: "the JWS header has no kid"}
	}
	signature, err := b64url(parts[2])
	if err != nil || len(signature) != ed25519.SignatureSize {
		return nil, &ReceiptError{Detail: "the JWS signature is not 64 bytes of base64url"}
	}
	payload, err := b64url(parts[1])
	if err != nil {
		return nil, &ReceiptError{Detail: "the JWS payload is not base64url"}
	}
	return &headJWS{kid: kid, signature: signature, signingInput: []byte(parts[0] + "." + parts[1]), payload: payload}, nil
}

type treeHead struct {
	instance       string
	tenant         string // "" (with environment) for a head of no tenant
	environment    string
	sequence, size int64
	root, previous []byte
	time           int64
}

// head reads the payload's tree head (after the signature verified).
func (j *headJWS) head() (*treeHead, error) {
	var wire struct {
		Instance    *string `json:"instance"`
		Tenant      *string `json:"tenant"`
		Environment *string `json:"environment"`
		Sequence    *int64  `json:"sequence"`
		Size        *int64  `json:"size"`
		Root        *string `json:"root"`
		Previous    *string `json:"previous"`
		Time        *int64  `json:"time"`
	}
	bad := &ReceiptError{Detail: "the head's payload is not a tree head"}
	if json.Unmarshal(j.payload, &wire) != nil || wire.Instance == nil || wire.Sequence == nil || wire.Size == nil ||
		wire.Root == nil || wire.Time == nil || *wire.Size <= 0 || *wire.Sequence < 0 {
		return nil, bad
	}
	root, err := b64url(*wire.Root)
	if err != nil || len(root) != sha256.Size {
		return nil, bad
	}
	head := &treeHead{instance: *wire.Instance, sequence: *wire.Sequence, size: *wire.Size, root: root, time: *wire.Time}
	if (wire.Tenant == nil) != (wire.Environment == nil) {
		return nil, bad
	}
	if wire.Tenant != nil {
		if *wire.Tenant == "" || *wire.Environment == "" {
			return nil, bad
		}
		head.tenant, head.environment = *wire.Tenant, *wire.Environment
	}
	if wire.Previous != nil {
		previous, err := b64url(*wire.Previous)
		if err != nil || len(previous) != sha256.Size {
			return nil, &ReceiptError{Detail: "the head's previous is not a SHA-256 hash"}
		}
		head.previous = previous
	}
	return head, nil
}

func b64url(text string) ([]byte, error) {
	if strings.ContainsAny(text, "=+/") {
		return nil, fmt.Errorf("not base64url")
	}
	return base64.RawURLEncoding.DecodeString(text)
}
