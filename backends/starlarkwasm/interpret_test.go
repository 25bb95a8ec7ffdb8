package starlarkwasm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// TestInterpret: every reading of what a run left behind, in particular
// that an out-of-memory is a limit (or the input's size before the
// script started), never a script error, and that a late record is the
// wall clock.
func TestInterpret(t *testing.T) {
	result := wasmguest.Record{Kind: wasmguest.RecResult, Body: []byte(`1`)}
	for _, tc := range []struct {
		name string
		f    facts
		want spi.Outcome
	}{
		{"result", facts{record: result, started: true, ending: endExit}, spi.OK([]byte(`1`))},
		{"a late result is the wall clock", facts{record: result, started: true, late: true}, spi.Limited(spi.LimitWallClock)},
		{"thrown", facts{record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["fail","m"]`)}, started: true}, spi.Threw("fail", "m")},
		{"syntax error before the start", facts{record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["SyntaxError","m"]`)}, inputRead: true}, spi.Threw("SyntaxError", "m")},
		{"step budget", facts{record: wasmguest.Record{Kind: wasmguest.RecCPU}, started: true}, spi.Limited(spi.LimitCPU)},
		{"out of memory in the script", facts{oom: true, inputRead: true, started: true, ending: endExit, exitCode: 2}, spi.Limited(spi.LimitMemory)},
		{"out of memory reading the input", facts{oom: true, inputRead: true, ending: endExit, exitCode: 2}, spi.InputTooLarge()},
		{"out of memory at boot", facts{oom: true, ending: endExit, exitCode: 2}, spi.Limited(spi.LimitMemory)},
		{"wall clock", facts{started: true, wallExpired: true, ending: endKilled}, spi.Limited(spi.LimitWallClock)},
		{"wall clock wins over the memory it stopped", facts{started: true, wallExpired: true, oom: true}, spi.Limited(spi.LimitWallClock)},
		{"stack overflow", facts{started: true, stack: true, ending: endExit, exitCode: 2}, spi.Threw("Error", msgStackOverflow)},
		{"an allocation the interpreter refuses is the memory limit", facts{record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["Error","script.star:2:20: excessive repeat (1 * 1073741824 elements)"]`)}, started: true}, spi.Limited(spi.LimitMemory)},
		{"a repeat count it refuses too", facts{record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["Error","script.star:7:3: repeat count 2147483648 too large"]`)}, started: true}, spi.Limited(spi.LimitMemory)},
		{"fail() with the same text is the script's", facts{record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["fail","script.star:2:20: excessive repeat (1 * 2 elements)"]`)}, started: true}, spi.Threw("fail", "script.star:2:20: excessive repeat (1 * 2 elements)")},
		{"other text around it is the script's", facts{record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["Error","script.star:2:20: key \"excessive repeat (1 * 2 elements)\" not in dict"]`)}, started: true}, spi.Threw("Error", `script.star:2:20: key "excessive repeat (1 * 2 elements)" not in dict`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.interpret()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for name, f := range map[string]facts{
		"protocol":                  {record: wasmguest.Record{Kind: wasmguest.RecProtocol}, inputRead: true},
		"a result before the start": {record: result},
		"exit without a record":     {inputRead: true, started: true, ending: endExit, exitCode: 2},
		"trap":                      {started: true, ending: endTrap, trap: "wasm error: unreachable"},
		"killed before the start":   {inputRead: true, ending: endKilled},
		"unreadable thrown record":  {record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`{`)}, started: true},
		"a CPU record before start": {record: wasmguest.Record{Kind: wasmguest.RecCPU}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.interpret()
			assert.Error(t, err, "an ending that says nothing about the script is an untyped error")
		})
	}
}
