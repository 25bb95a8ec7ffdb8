package receipt

import (
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/textbound"
)

// keyError is the error of a key that is not an Ed25519 key, or of a key
// file that holds something else: the caller's mistake. It matches
// effect.ErrInvalidKey, and so effect.ErrInvalidCall.
type keyError struct{ msg string }

func (e *keyError) Error() string { return e.msg }
func (e *keyError) Unwrap() error { return effect.ErrInvalidKey }

// invalidKey returns a keyError with the fixed message msg.
func invalidKey(msg string) error { return &keyError{msg: msg} }

// boundText bounds and scrubs text from a record for a reason, as the
// effect bounds a run's texts.
func boundText(s string) string { return textbound.Bound(s, effect.MaxTextUnits) }
