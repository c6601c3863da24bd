package insight

import (
	"crypto/ed25519"
	"errors"
	"sort"
	"strings"
)

// keyPins are the keys an application trusts to sign receipts' heads, whatever the JWKS of the
// base URL lists: a proxy between the client and insightd can serve a key set of its own and
// re-sign the answers it changes (docs/api.md, "Receipts"). See Options.PinnedKeys.
type keyPins struct {
	keys          map[string]ed25519.PublicKey // pinned keys: they verify without a fetch
	ids           map[string]bool              // every pinned kid (RFC 7638 thumbprint)
	allowUnpinned bool
}

// newKeyPins returns nil when nothing is pinned: the JWKS fetched is trusted, as before pins.
func newKeyPins(opts Options) (*keyPins, error) {
	if opts.PinnedKeys == nil && opts.PinnedKeyIDs == nil {
		return nil, nil
	}
	p := &keyPins{keys: map[string]ed25519.PublicKey{}, ids: map[string]bool{}, allowUnpinned: opts.AllowUnpinnedKeys}
	if opts.PinnedKeys != nil {
		for kid, key := range opts.PinnedKeys.keys {
			p.keys[kid], p.ids[kid] = key, true
		}
	}
	for _, kid := range opts.PinnedKeyIDs {
		p.ids[kid] = true
	}
	if len(p.ids) == 0 {
		return nil, errors.New("insightd: PinnedKeys and PinnedKeyIDs pin no key")
	}
	return p, nil
}

// admit refuses a head whose key is not pinned, before any fetch. A nil p admits every key.
func (p *keyPins) admit(kid string) error {
	if p == nil || p.allowUnpinned || p.ids[kid] {
		return nil
	}
	ids := make([]string, 0, len(p.ids))
	for id := range p.ids {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return &ReceiptError{Detail: "key " + kid + " is not pinned (pinned: " + strings.Join(ids, ", ") + ")"}
}

// apply is the key set to verify with: the pinned keys, and those of fetched (nil: none
// fetched yet) that are pinned — every one when unpinned keys are allowed.
func (p *keyPins) apply(fetched *KeySet) *KeySet {
	if p == nil {
		return fetched
	}
	set := &KeySet{keys: map[string]ed25519.PublicKey{}}
	if fetched != nil {
		for kid, key := range fetched.keys {
			if p.allowUnpinned || p.ids[kid] {
				set.keys[kid] = key
			}
		}
	}
	for kid, key := range p.keys {
		set.keys[kid] = key
	}
	return set
}
