package starlarkguest

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
		f    Facts
		want spi.Outcome
	}{
		{"result", Facts{Record: result, Started: true, Ending: EndExit}, spi.OK([]byte(`1`))},
		{"a late result is the wall clock", Facts{Record: result, Started: true, Late: true}, spi.Limited(spi.LimitWallClock)},
		{"thrown", Facts{Record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["fail","m"]`)}, Started: true}, spi.Threw("fail", "m")},
		{"syntax error before the start", Facts{Record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["SyntaxError","m"]`)}, InputRead: true}, spi.Threw("SyntaxError", "m")},
		{"step budget", Facts{Record: wasmguest.Record{Kind: wasmguest.RecCPU}, Started: true}, spi.Limited(spi.LimitCPU)},
		{"out of memory in the script", Facts{OOM: true, InputRead: true, Started: true, Ending: EndExit, ExitCode: 2}, spi.Limited(spi.LimitMemory)},
		{"out of memory reading the input", Facts{OOM: true, InputRead: true, Ending: EndExit, ExitCode: 2}, spi.InputTooLarge()},
		{"out of memory at boot", Facts{OOM: true, Ending: EndExit, ExitCode: 2}, spi.Limited(spi.LimitMemory)},
		{"wall clock", Facts{Started: true, WallExpired: true, Ending: EndKilled}, spi.Limited(spi.LimitWallClock)},
		{"wall clock wins over the memory it stopped", Facts{Started: true, WallExpired: true, OOM: true}, spi.Limited(spi.LimitWallClock)},
		{"stack overflow", Facts{Started: true, Stack: true, Ending: EndExit, ExitCode: 2}, spi.Threw("Error", msgStackOverflow)},
		{"an allocation the interpreter refuses is the memory limit", Facts{Record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["Error","script.star:2:20: excessive repeat (1 * 1073741824 elements)"]`)}, Started: true}, spi.Limited(spi.LimitMemory)},
		{"a repeat count it refuses too", Facts{Record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["Error","script.star:7:3: repeat count 2147483648 too large"]`)}, Started: true}, spi.Limited(spi.LimitMemory)},
		{"fail() with the same text is the script's", Facts{Record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["fail","script.star:2:20: excessive repeat (1 * 2 elements)"]`)}, Started: true}, spi.Threw("fail", "script.star:2:20: excessive repeat (1 * 2 elements)")},
		{"other text around it is the script's", Facts{Record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`["Error","script.star:2:20: key \"excessive repeat (1 * 2 elements)\" not in dict"]`)}, Started: true}, spi.Threw("Error", `script.star:2:20: key "excessive repeat (1 * 2 elements)" not in dict`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.Interpret()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for name, f := range map[string]Facts{
		"protocol":                  {Record: wasmguest.Record{Kind: wasmguest.RecProtocol}, InputRead: true},
		"a result before the start": {Record: result},
		"exit without a record":     {InputRead: true, Started: true, Ending: EndExit, ExitCode: 2},
		"trap":                      {Started: true, Ending: EndTrap, Trap: "wasm error: unreachable"},
		"killed before the start":   {InputRead: true, Ending: EndKilled},
		"unreadable thrown record":  {Record: wasmguest.Record{Kind: wasmguest.RecThrew, Body: []byte(`{`)}, Started: true},
		"a CPU record before start": {Record: wasmguest.Record{Kind: wasmguest.RecCPU}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.Interpret()
			assert.Error(t, err, "an ending that says nothing about the script is an untyped error")
		})
	}
}
