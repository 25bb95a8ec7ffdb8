package effect

import (
	"strconv"

	"github.com/sandbank/sandbank/record"
)

// MaxOutputDepth is the deepest nesting of arrays and objects a result may
// have. A deeper result is limitExceeded (output), on every engine: the
// effect checks the depth before anything parses the value (encoding/json
// itself refuses text nested past this depth).
const MaxOutputDepth = 10000

// outputTooDeep returns the typed failure of a result nested deeper than
// MaxOutputDepth (a fresh value: the caller may modify it).
func outputTooDeep() error {
	return &Failure{Code: record.CodeLimitExceeded, Kind: record.LimitOutput, Reason: outputDepthReason}
}

var outputDepthReason = "the result is nested deeper than the depth limit of " + strconv.Itoa(MaxOutputDepth) + " levels"

// tooDeep reports whether the JSON text v opens more than max arrays or
// objects without closing them, at any point. Brackets inside strings do
// not count. It only counts: text that is not JSON is left to json.Valid.
func tooDeep(v []byte, max int) bool {
	if len(v) <= max {
		return false // max+1 brackets do not fit
	}
	depth := 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			if depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}
