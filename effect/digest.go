package effect

import (
	"github.com/sandbank/sandbank/record"
)

// outcomeOf returns the receipt's outcome and limit kind for a run's
// error.
func outcomeOf(err error, f *Failure, canceled bool) (outcome, kind string) {
	switch {
	case canceled:
		return record.OutcomeCanceled, ""
	case err == nil:
		return record.OutcomeOK, ""
	case f != nil:
		if f.Kind.Valid() {
			kind = f.Kind.String()
		}
		return f.Code.String(), kind
	default:
		return record.OutcomeInfrastructure, ""
	}
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
