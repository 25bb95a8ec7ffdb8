package effect

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrRecordMismatch is matched (with errors.Is) by every error of Verify:
// the record does not agree with the script, the input or itself.
var ErrRecordMismatch = errors.New("effect: record does not verify")

// Verify checks a stored record against the script and the input it claims
// to have run, recomputing everything it can without running the script:
// the script's content address, the input's digest (input is what the
// call's Input was: a Go value or a json.RawMessage), the value's
// canonical form and digest, and that the outcome agrees with the value
// or the failure. It returns nil when all agree, or an error matching
// ErrRecordMismatch that names each disagreement.
//
// Verify proves the record is internally consistent and belongs to this
// script and input; to prove the engine gives this value, run the call
// again and compare OutputDigest (the same script, input, engine and
// limits give the same digest).
func Verify(rec *Record, script []byte, input any) error {
	if rec == nil {
		return fmt.Errorf("%w: no record", ErrRecordMismatch)
	}
	r := rec.Receipt
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrRecordMismatch}, args...)...))
	}
	if r.Format != ReceiptFormat {
		bad("receipt format %q, want %q", boundText(r.Format), ReceiptFormat)
	}
	if got := AddressOf(script); r.Script != got {
		bad("the script's address is %s, the receipt says %q", got, boundText(string(r.Script)))
	}
	in, err := encodeInput(input)
	switch {
	case err != nil:
		bad("the input cannot be serialised: %v", err)
	case inputDigest(in) != r.InputDigest:
		bad("the input's digest is %s, the receipt says %q", inputDigest(in), boundText(r.InputDigest))
	}
	switch {
	case r.Outcome == OutcomeOK:
		if rec.Value == nil {
			bad("outcome ok without a value")
			break
		}
		canon, err := canonicalize(rec.Value)
		if err != nil || !bytes.Equal(canon, rec.Value) {
			bad("the value is not canonical JSON text")
		}
		if got := digestOf(rec.Value); got != r.OutputDigest {
			bad("the value's digest is %s, the receipt says %q", got, boundText(r.OutputDigest))
		}
		if rec.Failure != nil {
			bad("outcome ok with a failure")
		}
	case rec.Failure != nil:
		if r.Outcome != rec.Failure.Code.String() {
			bad("outcome %q, the failure's code is %s", boundText(r.Outcome), rec.Failure.Code)
		}
		kind := ""
		if rec.Failure.Kind.Valid() {
			kind = rec.Failure.Kind.String()
		}
		if r.LimitKind != kind {
			bad("limit kind %q, the failure's is %q", boundText(r.LimitKind), kind)
		}
		if rec.Value != nil || r.OutputDigest != "" {
			bad("a failed run with a value")
		}
	default:
		if rec.Value != nil || r.OutputDigest != "" {
			bad("outcome %q with a value", boundText(r.Outcome))
		}
	}
	return errors.Join(errs...)
}
