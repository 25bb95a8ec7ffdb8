package goja

// The guards in this file exist because goja recurses on the Go stack when
// it parses source text, parses JSON and flattens arrays, and a Go stack
// overflow is a fatal error that no recover can catch: it ends the whole
// process. Each guard measures the nesting first, without recursion, and
// refuses what is too deep.

// A source's bracket nesting is measured with jsfront.Nesting, the one
// measure the JavaScript front end uses too (see TestSourceNestingEvasion
// for the measured worst case of decoy brackets in strings).

// jsonNesting returns the deepest nesting of arrays and objects in the
// JSON text s, skipping the contents of strings. It stops once the depth
// passes limit. It does not validate s: it measures what a JSON parser
// would nest before it met an error.
func jsonNesting[T ~string | ~[]byte](s T, limit int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}
