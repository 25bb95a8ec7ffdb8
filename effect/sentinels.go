package effect

import "errors"

// Sentinels, one per code: every *Failure unwraps to the sentinel of its
// code, so errors.Is(err, effect.ErrLimitExceeded) works.
var (
	ErrInputNotSerializable = errors.New("effect: input not serializable")
	ErrInputTooLarge        = errors.New("effect: input too large")
	ErrScriptMissing        = errors.New("effect: script missing")
	ErrLimitExceeded        = errors.New("effect: limit exceeded")
	ErrScriptError          = errors.New("effect: script error")
	ErrShapeMismatch        = errors.New("effect: shape mismatch")
	ErrScriptTooLarge       = errors.New("effect: script too large")
	ErrSuspended            = errors.New("effect: suspended")
	ErrReplayDiverged       = errors.New("effect: replay diverged")
)
