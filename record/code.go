package record

import "fmt"

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
	// (effect.Suspend); Reason is its reason. The host decided it, never the
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

// CodeNamed returns the code whose name (String) is s, such as
// CodeLimitExceeded for "limitExceeded"; it reports false for any other
// text. A receipt's outcome is OutcomeOK, a code's name,
// OutcomeInfrastructure or OutcomeCanceled.
func CodeNamed(s string) (Code, bool) {
	for c := Code(1); c.Valid(); c++ {
		if s == c.String() {
			return c, true
		}
	}
	return 0, false
}
