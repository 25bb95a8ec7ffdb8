package spi

import (
	"encoding/json"
	"fmt"
)

// OutcomeKind says what happened to an evaluation. The zero value is
// invalid; values are never renumbered.
type OutcomeKind int

// The outcome kinds.
const (
	// KindOK: the script finished with a value (Outcome.Value).
	KindOK OutcomeKind = iota + 1
	// KindLimit: a guard stopped the script (Outcome.Limit).
	KindLimit
	// KindThrew: the script raised an error or failed to compile
	// (Outcome.Name, optional, and Outcome.Message).
	KindThrew
	// KindInputTooLarge: the input overflowed the memory limit while being
	// parsed, before the script ran.
	KindInputTooLarge
	// KindInfrastructure: the engine itself failed (Outcome.Message). The
	// effect reports it as an untyped, retryable error.
	KindInfrastructure
)

var outcomeKindNames = [...]string{
	KindOK:             "ok",
	KindLimit:          "limit",
	KindThrew:          "threw",
	KindInputTooLarge:  "inputTooLarge",
	KindInfrastructure: "infrastructure",
}

// Valid reports whether k is one of the defined kinds.
func (k OutcomeKind) Valid() bool { return k >= KindOK && k <= KindInfrastructure }

// String returns the kind's name, or "OutcomeKind(N)" for an invalid value.
func (k OutcomeKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("OutcomeKind(%d)", int(k))
	}
	return outcomeKindNames[k]
}

// LimitKind names the guard that stopped a script. The zero value is
// invalid; values are never renumbered.
//
// It is the backend's vocabulary only. Package effect's LimitKind, which a
// typed failure carries, is a superset: the same names with the same
// numbers, plus the limits the effect enforces itself (output, input);
// effect.LimitKindOf converts. Application code compares with effect's
// constants.
type LimitKind int

// The limit kinds a backend may report.
const (
	// LimitCPU: a CPU or step budget ran out.
	LimitCPU LimitKind = iota + 1
	// LimitMemory: the memory limit was reached.
	LimitMemory
	// LimitWallClock: the wall clock ran out.
	LimitWallClock
	// LimitFiles: the script wrote more output files, or more bytes of
	// them, than Limits.MaxOutFiles or Limits.MaxOutFileBytes allow
	// (SPI 1.5.0). Its number is effect.LimitFiles's: 4 to 8 are limits
	// only the effect enforces.
	LimitFiles LimitKind = 9
)

var limitKindNames = [...]string{
	LimitCPU:       "cpu",
	LimitMemory:    "memory",
	LimitWallClock: "wallClock",
	LimitFiles:     "files",
}

// Valid reports whether k is one of the defined limit kinds.
func (k LimitKind) Valid() bool {
	return k >= LimitCPU && k <= LimitWallClock || k == LimitFiles
}

// String returns the limit's name ("cpu", "memory", "wallClock",
// "files"), or
// "LimitKind(N)" for an invalid value.
func (k LimitKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("LimitKind(%d)", int(k))
	}
	return limitKindNames[k]
}

// Outcome is what a backend reports about one evaluation: a kind plus the
// fields that kind uses. Build one with [OK], [Limited], [Threw],
// [InputTooLarge] or [Infrastructure]; the effect validates every outcome
// and treats a malformed one as an untyped error.
type Outcome struct {
	Kind OutcomeKind
	// Value is the script's result as JSON text (KindOK).
	Value json.RawMessage
	// Limit is the guard that stopped the script (KindLimit).
	Limit LimitKind
	// Name is the error's name, such as "TypeError" or "SyntaxError"
	// (KindThrew, optional).
	Name string
	// Message is the error text (KindThrew, KindInfrastructure).
	Message string
	// Stats are what the engine measured about the run, whatever its
	// kind (SPI 1.1.0); zero fields are not known.
	Stats Stats
	// Files are the output files the script wrote (KindOK only; SPI
	// 1.5.0), within the request's Limits.MaxOutFiles and
	// MaxOutFileBytes, names checked by CheckFileName, in name order. The
	// effect checks them again and never believes the backend's count.
	Files []File
}

// OK reports a finished script and its value as JSON text.
func OK(value json.RawMessage) Outcome { return Outcome{Kind: KindOK, Value: value} }

// Limited reports that the guard k stopped the script.
func Limited(k LimitKind) Outcome { return Outcome{Kind: KindLimit, Limit: k} }

// Threw reports that the script raised an error (name may be empty) or
// failed to compile.
func Threw(name, message string) Outcome {
	return Outcome{Kind: KindThrew, Name: name, Message: message}
}

// InputTooLarge reports that the input did not fit in the memory limit
// while being parsed, before the script ran.
func InputTooLarge() Outcome { return Outcome{Kind: KindInputTooLarge} }

// Infrastructure reports that the engine itself failed.
func Infrastructure(message string) Outcome {
	return Outcome{Kind: KindInfrastructure, Message: message}
}
