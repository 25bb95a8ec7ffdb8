package effect

import (
	"time"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/spi"
)

// ReceiptFormat names the receipt's format; it changes only if a field
// changes meaning (fields are only ever added).
const ReceiptFormat = "sandbank.receipt/1"

// The outcomes a receipt records besides a typed failure's code (such as
// "limitExceeded" or "scriptError").
const (
	// OutcomeOK: the run produced a value.
	OutcomeOK = "ok"
	// OutcomeInfrastructure: the run failed untyped (retryable).
	OutcomeInfrastructure = "infrastructure"
	// OutcomeCanceled: the caller's context was done first.
	OutcomeCanceled = "canceled"
)

// Receipt ties a run's result to what produced it. It is stable: its
// canonical JSON ([Receipt.Canonical]) has sorted keys and fixed field
// meanings, so it can go into an append-only log and be checked later
// (package receipt's Verify). Running the same script with the same input on the same
// engine under the same limits gives the same OutputDigest (replay); only
// Started and Duration differ between runs.
type Receipt struct {
	// Format is ReceiptFormat.
	Format string `json:"format"`
	// Script is the script's content address.
	Script Address `json:"script,omitempty"`
	// InputDigest is "sha256:<hex>" of the input's canonical JSON text
	// (compact, keys sorted); empty when the input could not be
	// serialised.
	InputDigest string `json:"inputDigest,omitempty"`
	// OutputDigest is "sha256:<hex>" of the canonical value, when the run
	// produced one, or of the typed failure's canonical JSON (as
	// Failure.MarshalJSON writes it, keys sorted), when it failed typed;
	// empty otherwise. Outcome tells the two apart.
	OutputDigest string `json:"outputDigest,omitempty"`
	// InputFiles and OutputFiles name the run's input files and the output
	// files of a run that succeeded, each by its content address, in name
	// order; empty when there are none. InputFiles are recorded whether
	// or not the run succeeded, once the files were accepted.
	InputFiles  []FileRef `json:"inputFiles,omitempty"`
	OutputFiles []FileRef `json:"outputFiles,omitempty"`
	// Engine is the engine's name (Options.Engine, or the backend's Go
	// type).
	Engine string `json:"engine"`
	// Backend is the backend's Go module and version ("path@version"),
	// from the program's build information; empty when not known.
	Backend string `json:"backend,omitempty"`
	// SPIVersion is spi.Version as this program was built with it.
	SPIVersion string `json:"spiVersion"`
	// Capabilities is the backend's declaration, as the effect froze it.
	Capabilities spi.Capabilities `json:"capabilities"`
	// Limits are the limits the run had.
	Limits ReceiptLimits `json:"limits"`
	// Outcome is OutcomeOK, a typed failure's code, OutcomeInfrastructure
	// or OutcomeCanceled.
	Outcome string `json:"outcome"`
	// LimitKind is the failure's limit kind (limitExceeded, inputTooLarge).
	LimitKind string `json:"limitKind,omitempty"`
	// Started is when the run started, in UTC.
	Started time.Time `json:"started"`
	// Duration is how long the run took.
	Duration time.Duration `json:"durationNs"`
	// HostLog is a durable run's HostLogDigest of its record's host
	// calls; empty for a run that is not durable (Call.Durable).
	HostLog string `json:"hostLog,omitempty"`
	// Previous is the digest ([Receipt.Digest]) of the receipt of the
	// run this one resumes (Durable.Resumes): the segments of a durable
	// run form a chain, each receipt naming the one before.
	Previous string `json:"previous,omitempty"`
	// Suspensions counts the times a durable run suspended before this
	// segment (zero for a first run).
	Suspensions int `json:"suspensions,omitempty"`
	// Signature is the host's signature over the receipt's other fields
	// (see Options.Signer and SignedBytes); nil when the effect has no
	// signer. receipt.Verify checks it against trusted keys.
	Signature *Signature `json:"signature,omitempty"`
}

// ReceiptLimits are the effective limits of a run: the call's, resolved
// against the effect's options.
type ReceiptLimits struct {
	WallClock      time.Duration `json:"wallClockNs"`
	MemoryBytes    int64         `json:"memoryBytes"`
	MaxInputBytes  int64         `json:"maxInputBytes"`
	MaxOutputBytes int64         `json:"maxOutputBytes"`
	MaxScriptBytes int64         `json:"maxScriptBytes"`
	MaxLogBytes    int64         `json:"maxLogBytes"`
	MaxLogLines    int           `json:"maxLogLines"`
	// MaxInputFiles, MaxInputFileBytes, MaxOutFiles and MaxOutFileBytes
	// bound the run's files (docs/design.md, "Files"); they are set
	// only when the engine declares Files, so the receipts of other
	// engines are unchanged.
	MaxInputFiles     int   `json:"maxInputFiles,omitempty"`
	MaxInputFileBytes int64 `json:"maxInputFileBytes,omitempty"`
	MaxOutFiles       int   `json:"maxOutFiles,omitempty"`
	MaxOutFileBytes   int64 `json:"maxOutFileBytes,omitempty"`
}

// FileRef names one file of a run in its receipt.
type FileRef struct {
	// Name is the file's name (spi.CheckFileName).
	Name string `json:"name"`
	// Digest is the file's content address ("sha256:<64 hex>").
	Digest Address `json:"digest"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
}

// Canonical returns the receipt as canonical JSON text: compact, object
// keys sorted, no trailing newline. Equal receipts give equal bytes. The
// signature, when there is one, is part of it.
func (r Receipt) Canonical() ([]byte, error) {
	return canon.JSON(r)
}

// Digest returns "sha256:<hex>" of the receipt's canonical JSON text.
func (r Receipt) Digest() (string, error) {
	b, err := r.Canonical()
	if err != nil {
		return "", err
	}
	return canon.Digest(b), nil
}

// outcomeOf returns the receipt's outcome and limit kind for a run's
// error.
func outcomeOf(err error, f *Failure, canceled bool) (outcome, kind string) {
	switch {
	case canceled:
		return OutcomeCanceled, ""
	case err == nil:
		return OutcomeOK, ""
	case f != nil:
		if f.Kind.Valid() {
			kind = f.Kind.String()
		}
		return f.Code.String(), kind
	default:
		return OutcomeInfrastructure, ""
	}
}

// The outcome and limit-kind vocabularies, derived from the closed enums:
// a receipt's outcome is OutcomeOK, a Code's name, OutcomeInfrastructure
// or OutcomeCanceled, and its limit kind a LimitKind's name.

// codeNamed returns the code whose name is s.
func codeNamed(s string) (Code, bool) {
	for c := Code(1); c.Valid(); c++ {
		if s == c.String() {
			return c, true
		}
	}
	return 0, false
}

// limitKindNamed returns the limit kind whose name is s.
func limitKindNamed(s string) (LimitKind, bool) {
	for k := LimitKind(1); k.Valid(); k++ {
		if s == k.String() {
			return k, true
		}
	}
	return 0, false
}

// InputDigest returns the digest a receipt records for a call's input
// (Receipt.InputDigest): "sha256:<hex>" of the input's canonical JSON
// text, input being what Call.Input holds (a Go value or a
// json.RawMessage). An input that cannot be serialised is the typed
// failure Run returns for it (CodeInputNotSerializable).
func InputDigest(input any) (string, error) {
	in, err := encodeInput(input)
	if err != nil {
		return "", err
	}
	return inputDigest(in), nil
}
