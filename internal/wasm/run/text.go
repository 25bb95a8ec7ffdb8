package run

import "strings"

// FirstLine is what a message may quote of a runtime's error text (a
// trap's, which wazero follows with a stack trace): its first line, at
// most 200 bytes.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
