//go:build cgo

package wasmtime

import "strings"

// firstLine returns the first meaningful line of a wasmtime error: with
// RUST_BACKTRACE set, wasmtime appends kilobytes of native backtrace, and
// a trap carries a wasm backtrace; neither helps a caller. Lines that
// only introduce or continue a backtrace are skipped, and the result is
// at most 200 bytes.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || backtraceLine(t) {
			continue
		}
		t = stripNumber(t)
		if len(t) > 200 {
			t = t[:200]
		}
		return t
	}
	return "no message"
}

func backtraceLine(t string) bool {
	for _, p := range []string{"error while executing at wasm backtrace", "wasm backtrace:", "Stack backtrace:", "stack backtrace:", "Caused by:", "at ", "note:"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	// Numbered frames: "0: 0x1234 - <unknown>!func", "12: std::rt::…".
	// A numbered cause ("0: wasm trap: …") is kept.
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(t) || t[i] != ':' {
		return false
	}
	rest := strings.TrimSpace(t[i+1:])
	// A frame without an offset names its function as module!function
	// ("0: qjs!dlmalloc").
	return rest == "" || strings.HasPrefix(rest, "0x") || strings.Contains(rest, "::") || strings.Contains(rest, "<unknown>") ||
		(strings.Contains(rest, "!") && !strings.Contains(rest, " "))
}

// stripNumber removes a cause's "N: " prefix.
func stripNumber(t string) string {
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(t) && t[i] == ':' && t[i+1] == ' ' {
		return strings.TrimSpace(t[i+2:])
	}
	return t
}
