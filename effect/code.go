package effect

import (
	"errors"
	"fmt"
)

// Code is the closed set of typed failure codes. The zero value is
// invalid; values are never renumbered.
type Code int

// The typed failure codes.
const (
	CodeInputNotSerializable Code = iota + 1
	CodeInputTooLarge
	CodeScriptMissing
	CodeLimitExceeded
	CodeScriptError
	CodeShapeMismatch
	CodeScriptTooLarge
	// CodeSuspended: a host function of a durable run answered "not yet"
	// (Suspend); Reason is its reason. The host decided it, never the
	// script: the same script, input and answers suspend the same way.
	CodeSuspended
	// CodeReplayDiverged: a durable run, replayed, made a host call other
	// than its log holds at that place (another name or other arguments);
	// Reason says which call. The replay stops there: the script never
	// gets an answer that was given to another call.
	CodeReplayDiverged
)

var codeNames = [...]string{
	CodeInputNotSerializable: "inputNotSerializable",
	CodeInputTooLarge:        "inputTooLarge",
	CodeScriptMissing:        "scriptMissing",
	CodeLimitExceeded:        "limitExceeded",
	CodeScriptError:          "scriptError",
	CodeShapeMismatch:        "shapeMismatch",
	CodeScriptTooLarge:       "scriptTooLarge",
	CodeSuspended:            "suspended",
	CodeReplayDiverged:       "replayDiverged",
}

// Valid reports whether c is one of the defined codes.
func (c Code) Valid() bool { return c >= CodeInputNotSerializable && c <= CodeReplayDiverged }

// String returns the code's name, such as "limitExceeded".
func (c Code) String() string {
	if !c.Valid() {
		return fmt.Sprintf("Code(%d)", int(c))
	}
	return codeNames[c]
}

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
