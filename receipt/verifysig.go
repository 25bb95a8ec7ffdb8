package receipt

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sandbank/sandbank/internal/textbound"
	"github.com/sandbank/sandbank/record"
)

// The reasons a receipt's signature does not verify. Each
// [SignatureError] unwraps to one of them and to ErrRecordMismatch.
var (
	// ErrUnsigned: the receipt has no signature, and the caller asked
	// for one (RequireSignature).
	ErrUnsigned = errors.New("effect: the receipt is not signed")
	// ErrUnknownKey: the receipt is signed by a key that is not among
	// the trusted keys.
	ErrUnknownKey = errors.New("effect: the receipt is signed by an unknown key")
	// ErrBadSignature: the signature is not the named key's signature of
	// this receipt (a field was changed after signing, the signature was
	// cut or swapped, or its algorithm is not Ed25519).
	ErrBadSignature = errors.New("effect: the receipt's signature does not verify")
	// ErrStaleKey: the signature holds, but the key was retired before
	// the run started.
	ErrStaleKey = errors.New("effect: the receipt is signed by a retired key")
)

// SignatureError is the error Verify reports for a receipt's signature.
// It matches ErrRecordMismatch and its Reason with errors.Is.
type SignatureError struct {
	// Reason is ErrUnsigned, ErrUnknownKey, ErrBadSignature or
	// ErrStaleKey.
	Reason error
	// KeyID is the key the receipt names (bounded); empty when unsigned.
	KeyID string
	// Retired is when the key was retired (ErrStaleKey).
	Retired time.Time
}

func (e *SignatureError) Error() string {
	switch e.Reason {
	case ErrUnsigned:
		return ErrRecordMismatch.Error() + ": the receipt is not signed"
	case ErrStaleKey:
		return fmt.Sprintf("%s: the receipt is signed by key %s, retired at %s, before the run started",
			ErrRecordMismatch, e.KeyID, e.Retired.UTC().Format(time.RFC3339))
	case ErrUnknownKey:
		return fmt.Sprintf("%s: the receipt is signed by key %q, which is not a trusted key", ErrRecordMismatch, e.KeyID)
	default:
		return fmt.Sprintf("%s: the receipt's signature by key %q does not verify", ErrRecordMismatch, e.KeyID)
	}
}

// Unwrap returns ErrRecordMismatch and the reason.
func (e *SignatureError) Unwrap() []error { return []error{ErrRecordMismatch, e.Reason} }

// TrustedKey is a public key a verifier trusts, as a host publishes it
// (GET /.well-known/sandbank-keys): current, or retired from a date on.
type TrustedKey struct {
	// KeyID is record.KeyIDOf(PublicKey); empty means computed.
	KeyID string `json:"keyId"`
	// Algorithm is record.SignatureEd25519; empty means it.
	Algorithm string `json:"alg"`
	// PublicKey is the Ed25519 public key (base64 in JSON).
	PublicKey ed25519.PublicKey `json:"publicKey"`
	// Retired, when set, is when the key stopped signing: a receipt it
	// signed for a run started at or after Retired is stale
	// (ErrStaleKey). Zero means the key is current.
	Retired time.Time `json:"retired,omitzero"`
}

// PublishedKeys is the JSON document in which a host publishes its keys,
// current and retired (sandbank serve: GET /.well-known/sandbank-keys).
type PublishedKeys struct {
	Keys []TrustedKey `json:"keys"`
}

// KeySet is a set of trusted keys, by key id. It is immutable.
type KeySet struct {
	byID map[string]TrustedKey
}

// NewKeySet returns the set of keys. A key that is not an Ed25519 public
// key, whose KeyID or Algorithm disagree with it, or that is listed twice
// is refused with an error matching effect.ErrInvalidKey.
func NewKeySet(keys ...TrustedKey) (*KeySet, error) {
	ks := &KeySet{byID: make(map[string]TrustedKey, len(keys))}
	for _, k := range keys {
		if len(k.PublicKey) != ed25519.PublicKeySize {
			return nil, invalidKey("effect: a trusted key is not an Ed25519 public key")
		}
		id := record.KeyIDOf(k.PublicKey)
		switch {
		case k.KeyID != "" && k.KeyID != id:
			return nil, invalidKey("effect: a trusted key's keyId is not the id of its public key")
		case k.Algorithm != "" && k.Algorithm != record.SignatureEd25519:
			return nil, invalidKey("effect: a trusted key's algorithm is not ed25519")
		}
		if _, dup := ks.byID[id]; dup {
			return nil, invalidKey("effect: a trusted key is listed twice")
		}
		k.KeyID, k.Algorithm = id, record.SignatureEd25519
		k.PublicKey = slices.Clone(k.PublicKey)
		ks.byID[id] = k
	}
	return ks, nil
}

// Keys returns the set's keys, sorted by id.
func (ks *KeySet) Keys() []TrustedKey {
	if ks == nil {
		return nil
	}
	out := make([]TrustedKey, 0, len(ks.byID))
	for _, k := range ks.byID {
		k.PublicKey = slices.Clone(k.PublicKey)
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b TrustedKey) int {
		switch {
		case a.KeyID < b.KeyID:
			return -1
		case a.KeyID > b.KeyID:
			return 1
		}
		return 0
	})
	return out
}

// VerifyOption is an option of Verify and VerifyReceipt.
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	keys    *KeySet
	require bool
	err     error // a WithKey of a key that is not one
}

// WithKeys makes Verify check a signed receipt's signature against ks:
// the key it names must be in ks (else ErrUnknownKey), the signature
// must be that key's over the receipt (else ErrBadSignature), and the key
// must not have been retired before the run started (else ErrStaleKey).
// An unsigned receipt still verifies, for consistency only, unless
// RequireSignature is given too.
func WithKeys(ks *KeySet) VerifyOption {
	return func(c *verifyConfig) { c.keys = ks }
}

// WithKey is WithKeys with the one current key pub. A pub that is not an
// Ed25519 public key makes Verify fail with an error matching
// effect.ErrInvalidKey.
func WithKey(pub ed25519.PublicKey) VerifyOption {
	return func(c *verifyConfig) {
		c.keys, c.err = NewKeySet(TrustedKey{PublicKey: pub})
	}
}

// RequireSignature makes Verify refuse a receipt without a signature
// (ErrUnsigned), and a signed one when it has no trusted keys to check
// it against (ErrUnknownKey).
func RequireSignature() VerifyOption {
	return func(c *verifyConfig) { c.require = true }
}

// signature checks the receipt's signature as the options ask: not at all
// without keys or RequireSignature.
func (v *verifier) signature(c *verifyConfig) {
	sig := v.r.Signature
	if c.keys == nil && !c.require {
		return
	}
	if sig == nil {
		if c.require {
			v.errs = append(v.errs, &SignatureError{Reason: ErrUnsigned})
		}
		return
	}
	id := textbound.Bound(sig.KeyID, 64)
	key, ok := TrustedKey{}, false
	if c.keys != nil {
		key, ok = c.keys.byID[sig.KeyID]
	}
	if !ok {
		v.errs = append(v.errs, &SignatureError{Reason: ErrUnknownKey, KeyID: id})
		return
	}
	msg, err := v.r.SignedBytes()
	if err != nil || sig.Algorithm != record.SignatureEd25519 || len(sig.Value) != ed25519.SignatureSize ||
		!ed25519.Verify(key.PublicKey, msg, sig.Value) {
		v.errs = append(v.errs, &SignatureError{Reason: ErrBadSignature, KeyID: id})
		return
	}
	if !key.Retired.IsZero() && !v.r.Started.Before(key.Retired) {
		v.errs = append(v.errs, &SignatureError{Reason: ErrStaleKey, KeyID: id, Retired: key.Retired})
	}
}

// verifyOptions applies opts.
func verifyOptions(opts []VerifyOption) *verifyConfig {
	c := &verifyConfig{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// VerifySignature checks a receipt's signature alone, as Verify does with
// the same options (WithKeys, RequireSignature), without the script or the
// input: for a receipt whose other fields something else checks (a durable
// run's continuation, which the effect checks against the script and the
// input it resumes).
func VerifySignature(r record.Receipt, opts ...VerifyOption) error {
	c := verifyOptions(opts)
	if c.err != nil {
		return c.err
	}
	v := &verifier{r: r}
	v.signature(c)
	return errors.Join(v.errs...)
}
