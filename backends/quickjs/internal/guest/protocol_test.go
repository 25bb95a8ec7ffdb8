package guest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

const testNonce = Nonce("0123456789abcdef0123456789abcdef")

func frame(n Nonce, kind byte, body string) string {
	p := framePrefix + string(n)
	switch kind {
	case recResult, recThrew, recHostCall:
		units := len(utf16.Encode([]rune(body)))
		return p + string(kind) + itoa(units) + "\n" + body + p + "E\n"
	}
	return p + string(kind) + "\n"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestNonceIsRandom(t *testing.T) {
	a, err := NewNonce()
	require.NoError(t, err)
	b, err := NewNonce()
	require.NoError(t, err)
	assert.Len(t, string(a), 32)
	assert.NotEqual(t, a, b)
}

func TestPayload(t *testing.T) {
	got := string(Payload(testNonce, []byte("a\n\"b\"\xff"), []byte("{\n\"x\": 1}"), false))
	assert.Equal(t, string(testNonce)+"\n"+`"a\n\"b\"`+"\uFFFD\"\n9\n{\n\"x\": 1}", got)
	got = string(Payload(testNonce, []byte("1"), []byte("null"), true))
	assert.Equal(t, string(testNonce)+"\n\"1\"\nh4\nnull", got, "a run with host functions says so before the input's length")
}

func TestStdoutRecords(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         Record
	}{
		{"result", frame(testNonce, 'S', "") + frame(testNonce, 'R', `{"a":"é"}`), Record{Kind: 'R', Body: []byte(`{"a":"é"}`)}},
		{"thrown", frame(testNonce, 'T', `["E","m"]`), Record{Kind: 'T', Body: []byte(`["E","m"]`)}},
		{"memory", frame(testNonce, 'M', ""), Record{Kind: 'M'}},
		{"input", frame(testNonce, 'I', ""), Record{Kind: 'I'}},
		{"nothing", "hello\n", Record{}},
		{"another nonce is ignored", frame("ffffffffffffffffffffffffffffffff", 'R', `"forged"`) + frame(testNonce, 'R', `"real"`), Record{Kind: 'R', Body: []byte(`"real"`)}},
		{"noise around the record", "junk\x1eSBK" + frame(testNonce, 'R', `1`) + "more", Record{Kind: 'R', Body: []byte(`1`)}},
		{"short body", framePrefix + string(testNonce) + "R5\n123" + framePrefix + string(testNonce) + "E\n", Record{}},
		{"long body", framePrefix + string(testNonce) + "R1\n123" + framePrefix + string(testNonce) + "E\n", Record{}},
		{"no end marker", framePrefix + string(testNonce) + "R1\n1", Record{}},
		{"bad length", framePrefix + string(testNonce) + "Rx\n1" + framePrefix + string(testNonce) + "E\n", Record{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStdout(testNonce, 1<<20, nil)
			// Byte by byte: records arrive in any split.
			for i := 0; i < len(tc.stream); i++ {
				_, _ = s.Write([]byte{tc.stream[i]})
			}
			assert.Equal(t, tc.want, s.Record())
		})
	}
}

func TestStdoutStartAndBound(t *testing.T) {
	starts := 0
	s := NewStdout(testNonce, 64, func() { starts++ })
	_, _ = s.Write([]byte("x" + framePrefix + string(testNonce)))
	assert.False(t, s.Started())
	_, _ = s.Write([]byte("S\n"))
	_, _ = s.Write([]byte(frame(testNonce, 'S', "")))
	assert.True(t, s.Started())
	assert.Equal(t, 1, starts)
	n, err := s.Write([]byte(strings.Repeat("y", 100)))
	require.NoError(t, err)
	assert.Equal(t, 100, n, "the guest never sees a short write")
	assert.Positive(t, s.Dropped())
}

func TestUTF16Prefix(t *testing.T) {
	for _, tc := range []struct {
		in    string
		units int
		n     int
		ok    bool
	}{
		{"abc", 3, 3, true},
		{"é😀x", 4, 7, true}, // é: 2 bytes 1 unit; 😀: 4 bytes 2 units
		{"😀", 1, 0, false},  // half a pair
		{"ab", 3, 0, false},
		{"\xff", 1, 0, false},
	} {
		n, ok := utf16Prefix([]byte(tc.in), tc.units)
		assert.Equal(t, tc.ok, ok, tc.in)
		if tc.ok {
			assert.Equal(t, tc.n, n, tc.in)
		}
	}
}

func TestInterpret(t *testing.T) {
	ok := func(f Facts) Facts { f.CanaryIntact = true; return f }
	result := Record{Kind: recResult, Body: []byte(`1`)}
	for _, tc := range []struct {
		name  string
		facts Facts
		want  spi.Outcome
	}{
		{"result", ok(Facts{Record: result, Started: true, Ending: EndExit}), spi.OK(json.RawMessage(`1`))},
		{"result, then the clock ran out", ok(Facts{Record: result, Started: true, Ending: EndKilled, WallClockExpired: true}), spi.OK(json.RawMessage(`1`))},
		{"a late result is the wall clock, even when the timer never fired", ok(Facts{Record: result, Started: true, Ending: EndExit, Late: true}), spi.Limited(spi.LimitWallClock)},
		{"a late thrown record too", ok(Facts{Record: Record{Kind: recThrew, Body: []byte(`["E","m"]`)}, Started: true, Late: true}), spi.Limited(spi.LimitWallClock)},
		{"clobbered canary beats a result", Facts{Record: result, Started: true, Ending: EndExit}, spi.Threw("InternalError", "stack overflow: the engine's C stack is exhausted (QuickJS on WASI has no stack check; recursion deeper than about 200 JavaScript frames overflows it)")},
		{"clobbered canary while parsing the input", Facts{Ending: EndTrap}, spi.InputTooLarge()},
		{"thrown", ok(Facts{Record: Record{Kind: recThrew, Body: []byte(`["TypeError","bad"]`)}, Started: true}), spi.Threw("TypeError", "bad")},
		{"memory", ok(Facts{Record: Record{Kind: recMemory}, Started: true}), spi.Limited(spi.LimitMemory)},
		{"input out of memory", ok(Facts{Record: Record{Kind: recInputOOM}}), spi.InputTooLarge()},
		{"input refused growth", ok(Facts{Record: Record{Kind: recProtocol}, InputRead: true, MemoryRefused: true}), spi.InputTooLarge()},
		{"input refused growth without a record", ok(Facts{Ending: EndExit, ExitCode: 1, InputRead: true, MemoryRefused: true}), spi.InputTooLarge()},
		{"boot refused growth", ok(Facts{Ending: EndExit, ExitCode: 1, MemoryRefused: true}), spi.Limited(spi.LimitMemory)},
		{"wall clock", ok(Facts{Started: true, Ending: EndKilled, WallClockExpired: true}), spi.Limited(spi.LimitWallClock)},
		{"trap after refused growth", ok(Facts{Started: true, Ending: EndTrap, MemoryRefused: true}), spi.Limited(spi.LimitMemory)},
		{"trap", ok(Facts{Started: true, Ending: EndTrap, Trap: "wasm error: unreachable\nwasm stack trace: ..."}), spi.Threw("InternalError", "stack overflow: the engine's C stack is exhausted (QuickJS on WASI has no stack check; recursion deeper than about 200 JavaScript frames overflows it) (wasm error: unreachable)")},
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
		"protocol":            ok(Facts{Record: Record{Kind: recProtocol}, Started: false}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Interpret(f, "boot")
			assert.Error(t, err)
		})
	}
}

// TestStdoutSeal: once sealed, the sink drops every write, so a record
// finished after the seal is never read; what came before stays.
func TestStdoutSeal(t *testing.T) {
	s := NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write([]byte(frame(testNonce, 'S', "")))
	s.Seal()
	_, _ = s.Write([]byte(frame(testNonce, 'R', `1`)))
	assert.True(t, s.Started())
	assert.Equal(t, Record{}, s.Record())
	assert.Positive(t, s.Dropped())
}

// TestStackExhaustedReadsAsAnOverflow: the host runtime's native stack
// running out is read as the C stack overflowing: the input's size before
// the script started, the stack overflow after.
func TestStackExhaustedReadsAsAnOverflow(t *testing.T) {
	f := Facts{InputRead: true, CanaryIntact: true, StackExhausted: true, Ending: EndTrap, Trap: "call stack exhausted"}
	out, err := Interpret(f, PhaseInput)
	require.NoError(t, err)
	assert.Equal(t, spi.InputTooLarge(), out)
	f.Started = true
	out, err = Interpret(f, PhaseScript)
	require.NoError(t, err)
	assert.Equal(t, spi.KindThrew, out.Kind)
	assert.Equal(t, "InternalError", out.Name)
}

// TestStdoutTook: the script's time as the stream shows it runs from the
// start record to the last write kept, and is zero before the start.
func TestStdoutTook(t *testing.T) {
	s := NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write([]byte("noise"))
	assert.Zero(t, s.Took())
	_, _ = s.Write([]byte(frame(testNonce, 'S', "")))
	time.Sleep(20 * time.Millisecond)
	_, _ = s.Write([]byte(frame(testNonce, 'R', `1`)))
	assert.GreaterOrEqual(t, s.Took(), 20*time.Millisecond)
	took := s.Took()
	s.Seal()
	time.Sleep(time.Millisecond)
	_, _ = s.Write([]byte("after the seal"))
	assert.Equal(t, took, s.Took(), "a write dropped after the seal does not count")
}
