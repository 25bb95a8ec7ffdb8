package extism

import (
	"bytes"
	"encoding/json"
	"io"
)

// isJSONText reports whether out is one JSON value, however deeply nested.
// encoding/json's Valid refuses text nested deeper than 10,000 levels; a
// plugin's deep but valid output is handed to the effect as it is, and the
// effect's output check refuses it with a typed limit naming the depth
// (the rule for every engine). The fast check decides almost every
// output; only text it refuses is read again token by token, which has no
// depth limit (the decoder keeps its nesting on the heap).
func isJSONText(out []byte) bool {
	if json.Valid(out) {
		return true
	}
	if len(out) == 0 {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber() // a number past float64's range (1e400) is still JSON
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			break
		}
	}
	_, err := dec.Token()
	return err == io.EOF
}
