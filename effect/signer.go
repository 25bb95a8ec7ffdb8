package effect

import (
	"context"
	"crypto/ed25519"
	"errors"
	"time"

	"github.com/sandbank/sandbank/record"
)

// ErrInvalidKey is matched by the error for a key that is not an Ed25519
// key (a Signer's public key of the wrong size; in package receipt, a key
// file or a trusted key that holds something else). It matches
// ErrInvalidCall: the caller's mistake.
var ErrInvalidKey error = &invalidSentinel{"effect: invalid key"}

// signTimeout bounds a Signer's Sign.
const signTimeout = 30 * time.Second

// signerConfig is the effect's signer, fixed in New.
type signerConfig struct {
	signer record.Signer // nil: receipts are not signed
	keyID  string
}

func (sc *signerConfig) init(s record.Signer) (err error) {
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
	sc.signer, sc.keyID = s, record.KeyIDOf(pub)
	return nil
}

// sign signs r in place with the effect's signer, if it has one. ctx is
// the caller's context without its cancellation (a cancelled run's
// receipt is signed too), bounded by signTimeout.
func (sc *signerConfig) sign(ctx context.Context, r *record.Receipt) (err error) {
	if sc.signer == nil {
		return nil
	}
	r.Signature = &record.Signature{Algorithm: record.SignatureEd25519, KeyID: sc.keyID}
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
