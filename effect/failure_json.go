package effect

import (
	"encoding/json"
	"fmt"

	"github.com/sandbank/sandbank/record"
)

// UnmarshalJSON decodes what MarshalJSON encodes, so that a stored Record
// reads back equal. An unknown code or limit kind is an error; text fields
// are bounded and made storable again, since stored text is not trusted.
func (f *Failure) UnmarshalJSON(b []byte) error {
	var w struct {
		Code    string `json:"code"`
		Kind    string `json:"kind"`
		Name    string `json:"name"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
		Bytes   int64  `json:"bytes"`
		Limit   int64  `json:"limit"`
		Script  string `json:"script"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	code, ok := record.CodeNamed(w.Code)
	if !ok {
		return fmt.Errorf("effect: unknown failure code %q", boundText(w.Code))
	}
	var kind record.LimitKind
	if w.Kind != "" {
		if kind, ok = record.LimitKindNamed(w.Kind); !ok {
			return fmt.Errorf("effect: unknown limit kind %q", boundText(w.Kind))
		}
	}
	*f = Failure{Code: code, Kind: kind, Name: boundText(w.Name), Message: boundText(w.Message),
		Reason: boundText(w.Reason), Bytes: w.Bytes, Limit: w.Limit, Script: record.Address(boundText(w.Script))}
	return nil
}
