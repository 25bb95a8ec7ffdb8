package record

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	// in receipts (KeyIDOf). The effect reads it once, in effect.New.
	PublicKey() ed25519.PublicKey
	// Sign returns the Ed25519 signature of message. An error leaves the
	// receipt unsigned and makes the run's error infrastructure (see
	// effect.Options.Signer).
	Sign(ctx context.Context, message []byte) ([]byte, error)
}

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
