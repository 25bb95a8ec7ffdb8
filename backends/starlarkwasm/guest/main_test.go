package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
)

const testNonce = wasmguest.Nonce("0123456789abcdef0123456789abcdef")

// guest runs the guest natively with a payload and returns the record the
// host would read and whether the script started.
func guest(t *testing.T, steps string, script, input string) (wasmguest.Record, bool, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run([]string{"guest", steps, "1000000", "1073741824", "0"}, bytes.NewReader(wasmguest.SizedPayload(testNonce, []byte(script), []byte(input), false)), &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	s := wasmguest.NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write(stdout.Bytes())
	return s.Record(), s.Started(), stderr.String()
}

// TestGuestRecords: every ending of the in-process engine is one record,
// and the start record comes only once the script is compiled and its
// input converted.
func TestGuestRecords(t *testing.T) {
	for _, tc := range []struct {
		name, steps, script, input string
		kind                       byte
		body                       string
		started                    bool
	}{
		{"result", "1000000", "def main(input):\n    return input", `{"a":"é😀"}`, wasmguest.RecResult, `{"a":"é😀"}`, true},
		{"fail", "1000000", "def main(input):\n    fail('boom')", `{}`, wasmguest.RecThrew, `["fail","boom"]`, true},
		{"syntax error, before the start", "1000000", "def main(input):\n  return (", `{}`, wasmguest.RecThrew, "", false},
		{"step budget", "1000", "def main(input):\n    for i in range(100000):\n        pass", `{}`, wasmguest.RecCPU, "", true},
		{"bad input, a host bug", "1000000", "def main(input):\n    return input", `{`, wasmguest.RecProtocol, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, started, _ := guest(t, tc.steps, tc.script, tc.input)
			assert.Equal(t, tc.kind, rec.Kind)
			if tc.body != "" {
				assert.Equal(t, tc.body, string(rec.Body))
			}
			assert.Equal(t, tc.started, started)
		})
	}
}

// TestGuestRefusesBadArguments: a malformed command line is refused with
// exit code 2 before anything is read.
func TestGuestRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{"guest"}, {"guest", "1", "2", "x"}, {"guest", "1", "0", "3", "0"}, {"guest", "1", "2", "3", "2"}} {
		var stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, stderr.String(), "guest: ")
	}
}

// TestGuestScriptLine: a script line that is not a JSON string is a
// protocol record, never a script error.
func TestGuestScriptLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"guest", "1", "1", "1073741824", "0"}, strings.NewReader(string(testNonce)+"\nnot json\n{}"), &stdout, &stderr)
	assert.Equal(t, 0, code)
	s := wasmguest.NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write(stdout.Bytes())
	assert.Equal(t, byte(wasmguest.RecProtocol), s.Record().Kind)
}

// TestGuestCollectsOnlyNearItsLimit: once run has read its arguments, the
// soft memory limit is the value of the third argument and GOGC the
// build's (gcPercent: off in WebAssembly, where the limit is the
// collector's only trigger; Go's default natively) (issue 43).
func TestGuestCollectsOnlyNearItsLimit(t *testing.T) {
	before := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(before)
		debug.SetMemoryLimit(limit)
	})
	guest(t, "1000000", "def main(input):\n    return input", `1`)
	assert.Equal(t, gcPercent, debug.SetGCPercent(100), "GOGC after run")
	assert.Equal(t, int64(1073741824), debug.SetMemoryLimit(-1), "the soft memory limit after run")
}
