package jsguest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

const testNonce = wasmguest.Nonce("0123456789abcdef0123456789abcdef")

func frame(n wasmguest.Nonce, kind byte, body string) string {
	p := framePrefix + string(n)
	switch kind {
	case recResult, recThrew:
		units := len([]rune(body)) // the tests' bodies are in the BMP
		return p + string(kind) + itoa(units) + "\n" + body + p + "E\n"
	}
	return p + string(kind) + "\n"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestPayload(t *testing.T) {
	got := string(Payload(testNonce, []byte("a\n\"b\"\xff"), []byte("{\n\"x\": 1}"), false))
	assert.Equal(t, string(testNonce)+"\n"+`"a\n\"b\"`+"\uFFFD\"\n9\n{\n\"x\": 1}", got)
	got = string(Payload(testNonce, []byte("1"), []byte("null"), true))
	assert.Equal(t, string(testNonce)+"\n\"1\"\nh4\nnull", got, "a run with host functions says so before the input's length")
}

func TestInterpret(t *testing.T) {
	ok := func(f Facts) Facts { f.CanaryIntact = true; return f }
	result := wasmguest.Record{Kind: recResult, Body: []byte(`1`)}
	for _, tc := range []struct {
		name  string
		facts Facts
		want  spi.Outcome
	}{
		{"result", ok(Facts{Record: result, Started: true, Ending: EndExit}), spi.OK(json.RawMessage(`1`))},
		{"result, then the clock ran out", ok(Facts{Record: result, Started: true, Ending: EndKilled, WallClockExpired: true}), spi.OK(json.RawMessage(`1`))},
		{"a late result is the wall clock, even when the timer never fired", ok(Facts{Record: result, Started: true, Ending: EndExit, Late: true}), spi.Limited(spi.LimitWallClock)},
		{"a late thrown record too", ok(Facts{Record: wasmguest.Record{Kind: recThrew, Body: []byte(`["E","m"]`)}, Started: true, Late: true}), spi.Limited(spi.LimitWallClock)},
		{"clobbered canary beats a result", Facts{Record: result, Started: true, Ending: EndExit}, spi.Threw("RangeError", "Maximum call stack size exceeded")},
		{"clobbered canary while parsing the input", Facts{Ending: EndTrap}, spi.InputTooLarge()},
		{"thrown", ok(Facts{Record: wasmguest.Record{Kind: recThrew, Body: []byte(`["TypeError","bad"]`)}, Started: true}), spi.Threw("TypeError", "bad")},
		{"a thrown value after refused growth is the memory limit", ok(Facts{Record: wasmguest.Record{Kind: recThrew, Body: []byte(`["","null"]`)}, Started: true, Ending: EndExit, MemoryRefused: true}), spi.Limited(spi.LimitMemory)},
		{"a result after refused growth stays the result", ok(Facts{Record: result, Started: true, Ending: EndExit, MemoryRefused: true}), spi.OK(json.RawMessage(`1`))},
		{"memory", ok(Facts{Record: wasmguest.Record{Kind: recMemory}, Started: true}), spi.Limited(spi.LimitMemory)},
		{"input out of memory", ok(Facts{Record: wasmguest.Record{Kind: recInputOOM}}), spi.InputTooLarge()},
		{"input refused growth", ok(Facts{Record: wasmguest.Record{Kind: recProtocol}, InputRead: true, MemoryRefused: true}), spi.InputTooLarge()},
		{"input refused growth without a record", ok(Facts{Ending: EndExit, ExitCode: 1, InputRead: true, MemoryRefused: true}), spi.InputTooLarge()},
		{"boot refused growth", ok(Facts{Ending: EndExit, ExitCode: 1, MemoryRefused: true}), spi.Limited(spi.LimitMemory)},
		{"wall clock", ok(Facts{Started: true, Ending: EndKilled, WallClockExpired: true}), spi.Limited(spi.LimitWallClock)},
		{"trap after refused growth", ok(Facts{Started: true, Ending: EndTrap, MemoryRefused: true}), spi.Limited(spi.LimitMemory)},
		{"trap", ok(Facts{Started: true, Ending: EndTrap, Trap: "wasm error: unreachable\nwasm stack trace: ..."}), spi.Threw("InternalError", "the engine trapped (wasm error: unreachable)")},
		{"exit without result", ok(Facts{Started: true, Ending: EndExit, ExitCode: 3}), spi.Threw("Error", "the script ended the engine without a result (exit code 3)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Interpret(tc.facts, "script")
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for name, f := range map[string]Facts{
		"exit before start":   ok(Facts{Ending: EndExit, ExitCode: 1}),
		"result before start": ok(Facts{Record: result, Ending: EndExit}),
		"protocol":            ok(Facts{Record: wasmguest.Record{Kind: recProtocol}, Started: false}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Interpret(f, "boot")
			assert.Error(t, err)
		})
	}
}

// TestStackExhaustedReadsAsAnOverflow: a stack running out (the stack
// pass's check, or the host runtime's native stack) is read as the C
// stack overflowing: the input's size before the script started, the
// RangeError after.
func TestStackExhaustedReadsAsAnOverflow(t *testing.T) {
	f := Facts{InputRead: true, CanaryIntact: true, StackExhausted: true, Ending: EndTrap, Trap: "call stack exhausted"}
	out, err := Interpret(f, wasmrun.PhaseInput)
	require.NoError(t, err)
	assert.Equal(t, spi.InputTooLarge(), out)
	f.Started = true
	out, err = Interpret(f, wasmrun.PhaseScript)
	require.NoError(t, err)
	assert.Equal(t, spi.Threw(NameStackOverflow, MsgStackOverflow), out)
	f.Record = wasmguest.Record{Kind: recResult, Body: []byte(`1`)}
	out, err = Interpret(f, wasmrun.PhaseScript)
	require.NoError(t, err)
	assert.Equal(t, spi.Threw(NameStackOverflow, MsgStackOverflow), out, "an overflow beats a result")
}

// TestThrownSyntaxErrorPosition: a thrown record with a line gets the
// column goja's parser finds on that line, or the line alone.
func TestThrownSyntaxErrorPosition(t *testing.T) {
	for _, tc := range []struct {
		name, body, script, want string
	}{
		{"no line", `["E","m"]`, "    foo(;", "m"},
		{"the column on the same line", `["SyntaxError","m",1]`, "    foo(;", "m (line 1, column 9)"},
		{"past the async wrapper's prefix", `["SyntaxError","m",1]`, "    await 1; foo(;", "m (line 1, column 18)"},
		{"goja's error on another line: the line alone", `["SyntaxError","m",2]`, "    foo(;\n1", "m (line 2)"},
		{"goja finds no error: the line alone", `["SyntaxError","m",1]`, "1", "m (line 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Facts{Record: wasmguest.Record{Kind: recThrew, Body: []byte(tc.body)}, Script: []byte(tc.script), Started: true, CanaryIntact: true}
			got, err := Interpret(f, wasmrun.PhaseScript)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.Message)
		})
	}
	for _, body := range []string{`["E"]`, `["E","m",1,2]`, `["E","m","1"]`, `{}`} {
		_, err := Interpret(Facts{Record: wasmguest.Record{Kind: recThrew, Body: []byte(body)}, Started: true, CanaryIntact: true}, wasmrun.PhaseScript)
		assert.ErrorContains(t, err, "quickjs: unreadable thrown record", body)
	}
}
