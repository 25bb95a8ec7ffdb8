package temporal

import "github.com/sandbank/sandbank/effect"

// failureWire is the JSON form of an *effect.Failure (see
// effect.Failure.MarshalJSON), read back.
type failureWire struct {
	Code    string         `json:"code"`
	Kind    string         `json:"kind,omitempty"`
	Name    string         `json:"name,omitempty"`
	Message string         `json:"message,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	Bytes   int64          `json:"bytes,omitempty"`
	Limit   int64          `json:"limit,omitempty"`
	Script  effect.Address `json:"script,omitempty"`
}

// failure converts w back to a Failure. It reports false for a code outside
// effect's closed set, a limitExceeded without a valid kind, and a kind
// outside the set.
func (w failureWire) failure() (*effect.Failure, bool) {
	code, ok := codeNamed(w.Code)
	if !ok {
		return nil, false
	}
	f := &effect.Failure{Code: code, Name: w.Name, Message: w.Message, Reason: w.Reason,
		Bytes: w.Bytes, Limit: w.Limit, Script: w.Script}
	if w.Kind != "" {
		if f.Kind, ok = kindNamed(w.Kind); !ok {
			return nil, false
		}
	}
	if code == effect.CodeLimitExceeded && !f.Kind.Valid() {
		return nil, false
	}
	return f, true
}

// codeNamed returns the code whose String is name.
func codeNamed(name string) (effect.Code, bool) {
	for c := effect.Code(1); c.Valid(); c++ {
		if c.String() == name {
			return c, true
		}
	}
	return 0, false
}

// kindNamed returns the limit kind whose String is name.
func kindNamed(name string) (effect.LimitKind, bool) {
	for k := effect.LimitKind(1); k.Valid(); k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}
