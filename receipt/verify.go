package receipt

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/spi"
)

// ErrRecordMismatch is matched (with errors.Is) by every error of Verify
// but one for an option that is invalid (WithKey of a key that is not
// one: effect.ErrInvalidKey): the record does not agree with the script, the
// input or itself, or its signature does not hold (SignatureError).
var ErrRecordMismatch = errors.New("effect: record does not verify")

// Verify checks a stored record against the script and the input it claims
// to have run, recomputing everything it can without running the script:
// the script's content address, the input's digest (input is what the
// call's Input was: a Go value or a json.RawMessage), the value's
// canonical form and digest, or the failure's, and the output files
// (Record.Files): exactly those the receipt's OutputFiles name, in order,
// each with its size and digest, and none unless the outcome is ok. The
// receipt's InputFiles are checked for form and bounds only (names,
// order, digests, the receipt's files limits): the input files are not
// handed to Verify. It also checks the record
// against itself, field by field, as [VerifyReceipt] does the receipt: the
// value is present exactly when the outcome is ok, the failure exactly
// when the outcome is a failure code, and then with that code, the
// receipt's limit kind and only the fields its code carries, its sizes
// agreeing with the receipt's limits. It returns nil when all agree, or an
// error matching ErrRecordMismatch that names each disagreement and the
// field.
//
// Verify proves the record is internally consistent and belongs to this
// script and input; to prove the engine gives this value, run the call
// again and compare OutputDigest (the same script, input, engine and
// limits give the same digest).
//
// With WithKeys (or WithKey), Verify also checks a signed receipt's
// signature, and reports a *SignatureError (matching ErrRecordMismatch
// and ErrUnknownKey, ErrBadSignature or ErrStaleKey) when it does not
// hold: then the receipt proves who vouches for the run. A receipt
// without a signature (Receipt.Signature nil) still verifies, for
// consistency only, unless RequireSignature is given (ErrUnsigned).
// Without options the signature is not checked.
func Verify(rec *effect.Record, script []byte, input any, opts ...VerifyOption) error {
	if rec == nil {
		return fmt.Errorf("%w: no record", ErrRecordMismatch)
	}
	c := verifyOptions(opts)
	if c.err != nil {
		return c.err
	}
	v := verifyReceipt(rec.Receipt, script, input)
	v.record(rec, script)
	v.signature(c)
	return errors.Join(v.errs...)
}

// VerifyReceipt checks a stored receipt alone against the script and the
// input it names: the script's content address and the input's digest,
// and the receipt against itself, field by field: its format; the outcome
// is ok, a failure code, infrastructure or canceled; the output digest is
// a sha256 digest, present exactly when the outcome has an output (ok or a
// failure code); the limit kind is one of the limit kinds, present exactly
// when the outcome is limitExceeded (or inputTooLarge, which names what
// the input did not fit in); the engine and the SPI version are named; the
// capabilities are valid; the limits are not negative; the start time is
// set and the duration not negative. It returns nil when all hold, or an
// error matching ErrRecordMismatch naming each disagreement and the field.
// Without the value, the output digest cannot be recomputed: use Verify
// with the record for that. The options check the signature, as
// Verify's do.
func VerifyReceipt(r effect.Receipt, script []byte, input any, opts ...VerifyOption) error {
	c := verifyOptions(opts)
	if c.err != nil {
		return c.err
	}
	v := verifyReceipt(r, script, input)
	v.signature(c)
	return errors.Join(v.errs...)
}

// verifier collects the disagreements of one verification. Every reason
// has fixed wording; text from the record is bounded.
type verifier struct {
	r    effect.Receipt
	code effect.Code // the outcome's failure code, or 0
	errs []error
}

func (v *verifier) bad(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%w: "+format, append([]any{ErrRecordMismatch}, args...)...))
}

func verifyReceipt(r effect.Receipt, script []byte, input any) *verifier {
	v := &verifier{r: r}
	if r.Format != effect.ReceiptFormat {
		v.bad("receipt format %q, want %q", boundText(r.Format), effect.ReceiptFormat)
	}
	v.outcome()
	if _, err := effect.ParseAddress(string(r.Script)); err != nil {
		v.bad("the receipt's script %q is not a content address", boundText(string(r.Script)))
	} else if got := effect.AddressOf(script); r.Script != got {
		v.bad("the script's address is %s, the receipt says %q", got, boundText(string(r.Script)))
	}
	v.input(input)
	if r.Engine == "" {
		v.bad("the receipt names no engine")
	}
	if r.Backend != "" {
		if path, version, ok := strings.Cut(r.Backend, "@"); !ok || path == "" || version == "" {
			v.bad("the receipt's backend %q is not path@version", boundText(r.Backend))
		}
	}
	if !isVersion(r.SPIVersion) {
		v.bad("the receipt's spiVersion %q is not MAJOR.MINOR.PATCH", boundText(r.SPIVersion))
	}
	if err := r.Capabilities.Validate(); err != nil {
		v.bad("the receipt's capabilities are invalid: %s", boundText(err.Error()))
	}
	v.limits()
	v.fileRefs("inputFiles", r.InputFiles, r.Limits.MaxInputFiles, r.Limits.MaxInputFileBytes)
	v.fileRefs("outputFiles", r.OutputFiles, r.Limits.MaxOutFiles, r.Limits.MaxOutFileBytes)
	if len(r.OutputFiles) > 0 && r.Outcome != effect.OutcomeOK {
		v.bad("the receipt's outcome %q has outputFiles", boundText(r.Outcome))
	}
	if r.Started.IsZero() {
		v.bad("the receipt has no start time")
	}
	if r.Duration < 0 {
		v.bad("the receipt's durationNs is negative")
	}
	if _, err := r.Canonical(); err != nil {
		v.bad("the receipt cannot be written as canonical JSON: %s", boundText(err.Error()))
	}
	return v
}

// outcome checks the outcome, the output digest and the limit kind against
// the closed vocabulary and against each other.
func (v *verifier) outcome() {
	r := v.r
	code, isCode := named[effect.Code](r.Outcome)
	switch {
	case isCode:
		v.code = code
	case r.Outcome == effect.OutcomeOK, r.Outcome == effect.OutcomeInfrastructure, r.Outcome == effect.OutcomeCanceled:
	default:
		v.bad("the receipt's outcome %q is not one of %s", boundText(r.Outcome), outcomeNames())
		return
	}
	hasOutput := isCode || r.Outcome == effect.OutcomeOK
	switch {
	case hasOutput && r.OutputDigest == "":
		v.bad("the receipt's outcome %s has an output, but it has no outputDigest", r.Outcome)
	case hasOutput:
		if _, err := effect.ParseAddress(r.OutputDigest); err != nil {
			v.bad("the receipt's outputDigest %q is not a sha256 digest", boundText(r.OutputDigest))
		}
	case r.OutputDigest != "":
		v.bad("the receipt's outcome %s has no output, but it has an outputDigest", r.Outcome)
	}
	kind, known := effect.LimitKind(0), r.LimitKind == ""
	if !known {
		if kind, known = named[effect.LimitKind](r.LimitKind); !known {
			v.bad("the receipt's limitKind %q is not one of %s", boundText(r.LimitKind), limitKindNames())
		}
	}
	if known && !kindFits(code, kind) {
		if kind == 0 {
			v.bad("the receipt's outcome %s has no limitKind", r.Outcome)
		} else {
			v.bad("the receipt's limitKind %s does not go with outcome %s", kind, r.Outcome)
		}
	}
}

// kindFits reports whether a failure of code c (0: no failure) may have
// limit kind k (0: none): limitExceeded has one, any but the input
// ceiling; inputTooLarge may name what the input did not fit in, the input
// ceiling or the engine's memory; nothing else has one.
func kindFits(c effect.Code, k effect.LimitKind) bool {
	switch c {
	case effect.CodeLimitExceeded:
		return k.Valid() && k != effect.LimitInput
	case effect.CodeInputTooLarge:
		return k == 0 || k == effect.LimitInput || k == effect.LimitMemory
	default:
		return k == 0
	}
}

// input checks the input's digest: the recomputed one, or none for an
// input that cannot be serialised, which is then the outcome.
func (v *verifier) input(input any) {
	r := v.r
	digest, err := effect.InputDigest(input)
	switch {
	case err != nil:
		if v.code != effect.CodeInputNotSerializable {
			v.bad("the input cannot be serialised: %v", err)
		}
		if r.InputDigest != "" {
			v.bad("the input cannot be serialised, but the receipt has an inputDigest")
		}
	case v.code == effect.CodeInputNotSerializable:
		v.bad("the receipt's outcome is inputNotSerializable, but the input serialises")
	case digest != r.InputDigest:
		v.bad("the input's digest is %s, the receipt says %q", digest, boundText(r.InputDigest))
	}
}

// limits checks that no limit is negative.
func (v *verifier) limits() {
	l := v.r.Limits
	for _, f := range []struct {
		name string
		n    int64
	}{
		{"wallClockNs", int64(l.WallClock)},
		{"memoryBytes", l.MemoryBytes},
		{"maxInputBytes", l.MaxInputBytes},
		{"maxOutputBytes", l.MaxOutputBytes},
		{"maxScriptBytes", l.MaxScriptBytes},
		{"maxLogBytes", l.MaxLogBytes},
		{"maxLogLines", int64(l.MaxLogLines)},
		{"maxInputFiles", int64(l.MaxInputFiles)},
		{"maxInputFileBytes", l.MaxInputFileBytes},
		{"maxOutFiles", int64(l.MaxOutFiles)},
		{"maxOutFileBytes", l.MaxOutFileBytes},
	} {
		if f.n < 0 {
			v.bad("the receipt's limit %s is negative", f.name)
		}
	}
}

// record checks the record's value, failure and error against the
// receipt.
func (v *verifier) record(rec *effect.Record, script []byte) {
	r := v.r
	if rec.Value != nil && r.Outcome != effect.OutcomeOK {
		v.bad("outcome %q with a value", boundText(r.Outcome))
	}
	if rec.Failure != nil && v.code == 0 {
		v.bad("outcome %q with a failure", boundText(r.Outcome))
	}
	if rec.Error != "" && (r.Outcome == effect.OutcomeOK || v.code != 0) {
		v.bad("outcome %s with an error text", r.Outcome)
	}
	v.files(rec)
	if r.HostLog != "" {
		// A durable run's receipt digests its host-call log.
		if got, err := effect.HostLogDigest(rec.HostCalls); err != nil || got != r.HostLog {
			v.bad("the host calls' log digest is %s, the receipt says %q", got, boundText(r.HostLog))
		}
	}
	switch {
	case r.Outcome == effect.OutcomeOK:
		v.value(rec)
	case v.code != 0:
		if rec.Failure == nil {
			v.bad("outcome %s without a failure", r.Outcome)
			return
		}
		v.failure(rec.Failure, script)
	}
}

// value checks an ok record's value: canonical, within the output limit,
// and with the receipt's digest.
func (v *verifier) value(rec *effect.Record) {
	r := v.r
	if rec.Value == nil {
		v.bad("outcome ok without a value")
		return
	}
	text, err := canon.Canonical(rec.Value)
	if err != nil || !bytes.Equal(text, rec.Value) {
		v.bad("the value is not canonical JSON text")
	}
	if n := int64(len(rec.Value)); n > r.Limits.MaxOutputBytes {
		v.bad("the value is %d bytes, over the receipt's maxOutputBytes %d", n, r.Limits.MaxOutputBytes)
	}
	if got := canon.Digest(rec.Value); got != r.OutputDigest {
		v.bad("the value's digest is %s, the receipt says %q", got, boundText(r.OutputDigest))
	}
}

// failure checks a failed record's failure: the outcome's code, the
// receipt's limit kind, only the fields its code carries, sizes that
// agree with the receipt's limits and the script, and the receipt's
// digest.
func (v *verifier) failure(f *effect.Failure, script []byte) {
	r := v.r
	if f.Code != v.code {
		v.bad("outcome %s, the failure's code is %s", r.Outcome, f.Code)
		return
	}
	kind := ""
	if f.Kind.Valid() {
		kind = f.Kind.String()
	}
	switch {
	case f.Kind != 0 && !f.Kind.Valid():
		v.bad("the failure's limit kind %d is not one of %s", int(f.Kind), limitKindNames())
	case r.LimitKind != kind:
		v.bad("limit kind %q, the failure's is %q", boundText(r.LimitKind), kind)
	}
	// The fields each code carries, as Failure documents them; any other
	// set field is one the failure's digest does not cover.
	carries := func(field string, set bool, codes ...effect.Code) {
		for _, c := range codes {
			if c == f.Code {
				return
			}
		}
		if set {
			v.bad("the failure's %s does not go with code %s", field, f.Code)
		}
	}
	carries("kind", f.Kind != 0, effect.CodeLimitExceeded, effect.CodeInputTooLarge)
	carries("name", f.Name != "", effect.CodeScriptError)
	carries("message", f.Message != "", effect.CodeScriptError)
	carries("reason", f.Reason != "", effect.CodeInputNotSerializable, effect.CodeShapeMismatch, effect.CodeLimitExceeded, effect.CodeInputTooLarge,
		effect.CodeSuspended, effect.CodeReplayDiverged)
	carries("bytes", f.Bytes != 0, effect.CodeInputTooLarge, effect.CodeScriptTooLarge)
	if f.Code != effect.CodeLimitExceeded || (f.Kind != effect.LimitHostCalls && f.Kind != effect.LimitSuspensions && f.Kind != effect.LimitHostLog) {
		carries("limit", f.Limit != 0, effect.CodeInputTooLarge, effect.CodeScriptTooLarge)
	}
	carries("script", f.Script != "", effect.CodeScriptMissing)
	v.sizes(f, script)
	if got, err := canon.DigestJSON(f); err != nil || got != r.OutputDigest {
		v.bad("the failure's digest is %s, the receipt says %q", got, boundText(r.OutputDigest))
	}
}

// sizes checks a failure's sizes and address against the receipt's
// limits and the script.
func (v *verifier) sizes(f *effect.Failure, script []byte) {
	l := v.r.Limits
	if f.Bytes < 0 || f.Limit < 0 {
		v.bad("the failure's bytes or limit is negative")
		return
	}
	switch f.Code {
	case effect.CodeInputTooLarge:
		switch f.Kind {
		case effect.LimitInput:
			if f.Reason != "" {
				// The input files' bounds: the reason says which.
				if f.Bytes != 0 || f.Limit != 0 {
					v.bad("the failure for the input files has bytes or a limit")
				}
			} else if f.Limit != l.MaxInputBytes || f.Bytes <= f.Limit {
				v.bad("the failure's input of %d bytes over a limit of %d does not agree with the receipt's maxInputBytes %d", f.Bytes, f.Limit, l.MaxInputBytes)
			}
		case effect.LimitMemory:
			if f.Limit != l.MemoryBytes {
				v.bad("the failure's memory limit %d is not the receipt's memoryBytes %d", f.Limit, l.MemoryBytes)
			}
		}
	case effect.CodeScriptTooLarge:
		if f.Limit != l.MaxScriptBytes || f.Bytes != int64(len(script)) || f.Bytes <= f.Limit {
			v.bad("the failure's script of %d bytes over a limit of %d does not agree with the script's %d bytes and the receipt's maxScriptBytes %d", f.Bytes, f.Limit, len(script), l.MaxScriptBytes)
		}
	case effect.CodeScriptMissing:
		if f.Script != v.r.Script {
			v.bad("the failure's script %q is not the receipt's", boundText(string(f.Script)))
		}
	}
}

// isVersion reports whether s is MAJOR.MINOR.PATCH, each a decimal number.
func isVersion(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 9 || strings.TrimLeft(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// fileRefs checks a receipt's references to files (field names them):
// each name one spi.CheckFileName accepts, in strictly increasing order
// (so none twice), each digest a content address, each size not
// negative; with a bound (a Files engine's receipt), no more files and
// bytes than it allows, and without one, no files at all.
func (v *verifier) fileRefs(field string, refs []effect.FileRef, maxFiles int, maxBytes int64) {
	var total int64
	for i, f := range refs {
		switch {
		case spi.CheckFileName(f.Name) != nil:
			v.bad("the receipt's %s[%d] has a name that is not a file name", field, i)
		case i > 0 && f.Name <= refs[i-1].Name:
			v.bad("the receipt's %s are not in strictly increasing name order at %d", field, i)
		}
		if _, err := effect.ParseAddress(string(f.Digest)); err != nil {
			v.bad("the receipt's %s[%d] digest %q is not a content address", field, i, boundText(string(f.Digest)))
		}
		if f.Bytes < 0 {
			v.bad("the receipt's %s[%d] has a negative size", field, i)
		}
		total += f.Bytes
	}
	if len(refs) > maxFiles || total > maxBytes {
		v.bad("the receipt's %s are %d files of %d bytes, past its bounds of %d files and %d bytes", field, len(refs), total, maxFiles, maxBytes)
	}
}

// files checks the record's output files against the receipt: present
// only when the outcome is ok, and then exactly the files the receipt's
// OutputFiles name, in their order, with their digests and sizes.
func (v *verifier) files(rec *effect.Record) {
	r := v.r
	if r.Outcome != effect.OutcomeOK {
		if len(rec.Files) > 0 {
			v.bad("outcome %q with output files", boundText(r.Outcome))
		}
		return
	}
	if len(rec.Files) != len(r.OutputFiles) {
		v.bad("the record has %d output files, the receipt names %d", len(rec.Files), len(r.OutputFiles))
		return
	}
	for i, f := range rec.Files {
		want := r.OutputFiles[i]
		switch {
		case f.Name != want.Name:
			v.bad("the record's output file %d is not the receipt's %q", i, boundText(want.Name))
		case int64(len(f.Data)) != want.Bytes:
			v.bad("the output file %q is %d bytes, the receipt says %d", boundText(want.Name), len(f.Data), want.Bytes)
		case effect.AddressOf(f.Data) != want.Digest:
			v.bad("the output file %q's digest is %s, the receipt says %q", boundText(want.Name), effect.AddressOf(f.Data), boundText(string(want.Digest)))
		}
	}
}
