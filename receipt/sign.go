package receipt

import (
	"context"
	"crypto/ed25519"
	"fmt"

	"github.com/sandbank/sandbank/record"
)

// Ed25519Signer is an record.Signer over an Ed25519 private key held in memory.
type Ed25519Signer struct {
	key ed25519.PrivateKey
}

var _ record.Signer = (*Ed25519Signer)(nil)

// NewEd25519Signer returns an record.Signer over key, which must be an Ed25519
// private key (ed25519.PrivateKeySize bytes); the key is copied.
func NewEd25519Signer(key ed25519.PrivateKey) (*Ed25519Signer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, invalidKey("effect: an Ed25519 private key is 64 bytes")
	}
	return &Ed25519Signer{key: append(ed25519.PrivateKey(nil), key...)}, nil
}

// GenerateEd25519Signer returns an record.Signer over a new random key.
func GenerateEd25519Signer() (*Ed25519Signer, error) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, fmt.Errorf("effect: generating a key: %w", err)
	}
	return &Ed25519Signer{key: key}, nil
}

// PublicKey returns the key's public half.
func (s *Ed25519Signer) PublicKey() ed25519.PublicKey {
	return s.key.Public().(ed25519.PublicKey)
}

// PrivateKey returns a copy of the private key, to write it to a file.
func (s *Ed25519Signer) PrivateKey() ed25519.PrivateKey {
	return append(ed25519.PrivateKey(nil), s.key...)
}

// Sign returns the Ed25519 signature of message; it never fails.
func (s *Ed25519Signer) Sign(_ context.Context, message []byte) ([]byte, error) {
	return ed25519.Sign(s.key, message), nil
}
