package effect

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// SignatureEd25519 is the only signature algorithm receipts use so far:
// Ed25519 (RFC 8032, pure, no pre-hash) over the receipt's signed bytes
// (see [Receipt.SignedBytes]).
const SignatureEd25519 = "ed25519"

// Signature is a receipt's signature by the key of the host that ran the
// script. It proves who vouches for the run, not that the engine is
// honest (see docs/record.md).
type Signature struct {
	// Algorithm is SignatureEd25519.
	Algorithm string `json:"alg"`
	// KeyID names the signing key: KeyIDOf its public key.
	KeyID string `json:"keyId"`
	// Value is the signature (64 bytes for Ed25519; base64 in JSON).
	Value []byte `json:"value,omitempty"`
}

// Signer signs receipts. An Ed25519 key held in memory is
// receipt.NewEd25519Signer; a key held in an HSM or a KMS implements
// Signer itself. Sign is called once per run that has a record, after the run,
// and must honour ctx (a signer that does not return holds the run).
type Signer interface {
	// PublicKey returns the signing key's public half; it names the key
	// in receipts (KeyIDOf). The effect reads it once, in New.
	PublicKey() ed25519.PublicKey
	// Sign returns the Ed25519 signature of message. An error leaves the
	// receipt unsigned and makes the run's error infrastructure (see
	// Options.Signer).
	Sign(ctx context.Context, message []byte) ([]byte, error)
}

// ErrInvalidKey is matched by the error for a key that is not an Ed25519
// key (a Signer's public key of the wrong size; in package receipt, a key
// file or a trusted key that holds something else). It matches
// ErrInvalidCall: the caller's mistake.
var ErrInvalidKey error = &invalidSentinel{"effect: invalid key"}

// KeyIDOf returns the id that names pub in receipts and key sets: the
// first 16 bytes of the SHA-256 of the public key, in lower-case hex.
func KeyIDOf(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:16])
}

// SignedBytes returns the bytes a receipt's signature covers: the
// receipt's canonical JSON text ([Receipt.Canonical]) with its
// "signature" member holding only "alg" and "keyId" (no "value"). So the
// signature covers every field, the algorithm and the key's id. It fails
// for a receipt without a signature.
func (r Receipt) SignedBytes() ([]byte, error) {
	if r.Signature == nil {
		return nil, errors.New("effect: the receipt has no signature")
	}
	r.Signature = &Signature{Algorithm: r.Signature.Algorithm, KeyID: r.Signature.KeyID}
	return r.Canonical()
}

// signTimeout bounds a Signer's Sign.
const signTimeout = 30 * time.Second

// signerConfig is the effect's signer, fixed in New.
type signerConfig struct {
	signer Signer // nil: receipts are not signed
	keyID  string
}

func (sc *signerConfig) init(s Signer) (err error) {
	if s == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			err = invalid(ErrInvalidKey, "effect: options: the Signer panicked reporting its public key")
		}
	}()
	pub := s.PublicKey()
	if len(pub) != ed25519.PublicKeySize {
		return invalid(ErrInvalidKey, "effect: options: the Signer's public key is not an Ed25519 key")
	}
	sc.signer, sc.keyID = s, KeyIDOf(pub)
	return nil
}

// sign signs r in place with the effect's signer, if it has one. ctx is
// the caller's context without its cancellation (a cancelled run's
// receipt is signed too), bounded by signTimeout.
func (sc *signerConfig) sign(ctx context.Context, r *Receipt) (err error) {
	if sc.signer == nil {
		return nil
	}
	r.Signature = &Signature{Algorithm: SignatureEd25519, KeyID: sc.keyID}
	msg, err := r.SignedBytes()
	if err != nil {
		r.Signature = nil
		return foreignError("effect: signing the receipt: ", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signTimeout)
	defer cancel()
	defer func() {
		if recover() != nil {
			r.Signature = nil
			err = errors.New("effect: signing the receipt: the Signer panicked")
		}
	}()
	sig, err := sc.signer.Sign(ctx, msg)
	if err != nil {
		r.Signature = nil
		return foreignError("effect: signing the receipt: ", err)
	}
	r.Signature.Value = sig
	return nil
}
