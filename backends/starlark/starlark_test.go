package starlark_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/spi"
)

// generous limits for runs that must not be stopped by the clock.
var generous = spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20}

func newBackend(t *testing.T, opts *starlark.Options) spi.Backend {
	t.Helper()
	b, err := starlark.New(opts)
	require.NoError(t, err)
	return b
}

func eval(t *testing.T, b spi.Backend, src, input string, limits spi.Limits) spi.Outcome {
	t.Helper()
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: json.RawMessage(input), Limits: limits})
	require.NoError(t, err)
	return out
}

// value runs src and requires an OK outcome; it returns the JSON text.
func value(t *testing.T, src, input string) string {
	t.Helper()
	out := eval(t, newBackend(t, nil), src, input, generous)
	require.Equal(t, spi.KindOK, out.Kind, "outcome %+v", out)
	require.True(t, json.Valid(out.Value), "invalid JSON %q", out.Value)
	return string(out.Value)
}

// threw runs src and requires a Threw outcome.
func threw(t *testing.T, b spi.Backend, src, input string) spi.Outcome {
	t.Helper()
	if b == nil {
		b = newBackend(t, nil)
	}
	out := eval(t, b, src, input, generous)
	require.Equal(t, spi.KindThrew, out.Kind, "outcome %+v", out)
	return out
}

const echo = "def main(input):\n    return input\n"

func TestNewValidatesOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *starlark.Options
		err  string
	}{
		{"nil", nil, ""},
		{"zero", &starlark.Options{}, ""},
		{"set", &starlark.Options{MaxSteps: 1, MaxResultBytes: 1}, ""},
		{"negative steps", &starlark.Options{MaxSteps: -1}, "starlark: MaxSteps is -1"},
		{"negative result", &starlark.Options{MaxResultBytes: -5}, "starlark: MaxResultBytes is -5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := starlark.New(tc.opts)
			if tc.err != "" {
				require.Error(t, err)
				assert.Nil(t, b)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, b)
		})
	}
}

func TestCapabilitiesAreTheMeasuredOnes(t *testing.T) {
	c := newBackend(t, nil).Capabilities()
	require.NoError(t, c.Validate())
	assert.Equal(t, spi.Capabilities{
		Language: "starlark", Network: spi.NetworkNone, WallClock: spi.WallClockSoft,
		Memory: false, CPU: true, FreshPerRun: true, HostCalls: true, Logs: true, Files: true,
	}, c)
}

func TestEchoKeepsValuesExactly(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"past 2^53", `9007199254740993`},
		{"2^64", `18446744073709551616`},
		{"huge negative", `-1000000000000000000000000000000000000000`},
		{"max int64", `9223372036854775807`},
		{"min int64", `-9223372036854775808`},
		{"fraction", `3.25`},
		{"tiny", `1e-7`},
		{"large float", `1.5e300`},
		{"negative float", `-0.5`},
		{"astral and escapes", `"😀 𝄞 \ud83d\ude00 \"\\\n\t\r\b\f\/ \u0000\u001f\u2028\u2029"`},
		{"bmp", `"é ü 中文 ✓"`},
		{"literals", `[true,false,null]`},
		{"empties", `{"object":{},"array":[],"string":""}`},
		{"key order", `{"b":1,"a":2,"c":{"z":0,"y":1}}`},
		{"nested 100", strings.Repeat(`[`, 100) + `1` + strings.Repeat(`]`, 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := value(t, echo, tc.in)
			assert.JSONEq(t, tc.in, got)
			if !strings.ContainsAny(tc.in, `\.e`) {
				assert.Equal(t, strings.ReplaceAll(tc.in, " ", ""), strings.ReplaceAll(got, " ", ""), "text kept as is")
			}
		})
	}
}

func TestIntegersAreExactBothWays(t *testing.T) {
	// Arithmetic past 2^53 stays exact: JavaScript would answer ...992.
	assert.Equal(t, `9007199254740993`, value(t, "def main(input):\n    return input + 1\n", `9007199254740992`))
	assert.Equal(t, `1267650600228229401496703205376`, value(t, "def main(input):\n    return 1 << 100\n", `null`))
	assert.Equal(t, `-340282366920938463463374607431768211456`, value(t, "def main(input):\n    return -input * input\n", `18446744073709551616`))
}

func TestNumbersKeepTheirKind(t *testing.T) {
	typeOf := "def main(input):\n    return type(input)\n"
	for in, want := range map[string]string{
		`5`: `"int"`, `-0`: `"int"`, `123456789012345678901234567890`: `"int"`,
		`5.0`: `"float"`, `5e0`: `"float"`, `1E2`: `"float"`, `1e400`: `"float"`,
	} {
		assert.Equal(t, want, value(t, typeOf, in), in)
	}
	// Floats are spelled as JavaScript spells numbers (JSON.stringify(-0) is
	// "0": "-0" would read back as the integer 0).
	assert.Equal(t, `[2,0.1,0,1e+21,123456789012345680000,1e-7,0.000001,4411500,-1.5e+300,5e-324]`,
		value(t, "def main(input):\n    return [2.0, 0.1, -0.0, 1e21, 123456789012345678901.0, 1e-7, 1e-6, 4411500.0, -1.5e300, 5e-324]\n", `null`))
}

func TestStringsBecomeValidUTF8(t *testing.T) {
	// A lone surrogate in the input becomes U+FFFD (encoding/json).
	assert.Equal(t, `"a\ufffdb"`, toASCII(value(t, echo, `"a\ud800b"`)))
	// Invalid UTF-8 made by slicing a character becomes U+FFFD per byte.
	assert.Equal(t, `"\ufffd|\ufffd\ufffd\ufffd"`, toASCII(value(t, "def main(input):\n    return \"é\"[0:1] + \"|\" + \"\\ud7ff\"[0] + \"\\u00a0\"[1] + \"\\u0080\"[1]\n", `null`)))
	// Control characters are escaped.
	assert.Equal(t, `"\u0000\u0001\n\"\\"`, value(t, "def main(input):\n    return \"\\x00\\x01\\n\\\"\\\\\"\n", `null`))
}

// toASCII re-encodes JSON text with non-ASCII escaped, to compare it.
func toASCII(s string) string {
	var v string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "invalid: " + s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestTuplesAndNestingEncode(t *testing.T) {
	assert.Equal(t, `[[1,2],{"t":[3,[4]]},[]]`, value(t, "def main(input):\n    return ((1, 2), {\"t\": (3, [4])}, ())\n", `null`))
	// Shared sub-values that are not cycles are fine.
	assert.Equal(t, `[[1],[1],{"a":[1]}]`, value(t, "def main(input):\n    x = [1]\n    return [x, x, {\"a\": x}]\n", `null`))
	// Mutating the input is fine: it is the script's own copy.
	assert.Equal(t, `{"a":1,"b":2}`, value(t, "def main(input):\n    input[\"b\"] = 2\n    return input\n", `{"a":1}`))
}

func TestUnencodableResultsThrowNamingTheProblem(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"function", "return main", "type function"},
		{"builtin", "return [len]", "type builtin_function_or_method"},
		{"module", "return {\"m\": json}", "type module"},
		{"bytes", "return b\"x\"", "type bytes"},
		{"range", "return range(3)", "type range"},
		{"nan", "return float(\"nan\")", "non-finite float"},
		{"inf", "return [float(\"-inf\")]", "non-finite float"},
		{"int key", "return {1: 2}", "dict key of type int"},
		{"tuple key", "return {\"a\": {(1, 2): 3}}", "dict key of type tuple"},
		{"list cycle", "x = []\n    x.append(x)\n    return x", "cycle"},
		{"dict cycle", "d = {}\n    d[\"self\"] = [d]\n    return d", "cycle"},
		{"tuple cycle", "x = []\n    x.append((1, x))\n    return x", "cycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := threw(t, nil, "def main(input):\n    "+tc.body+"\n", `null`)
			assert.Equal(t, "Error", out.Name)
			assert.Contains(t, out.Message, tc.want)
		})
	}
}

func TestResultSizeIsBoundedWhileEncoding(t *testing.T) {
	// 2^40 leaves through sharing: without the bound this would not end.
	b := newBackend(t, &starlark.Options{MaxResultBytes: 1 << 16})
	out := threw(t, b, "def main(input):\n    x = [1]\n    for _ in range(40):\n        x = [x, x]\n    return x\n", `null`)
	assert.Contains(t, out.Message, "larger than 65536 bytes")
	// The bound is on the whole text.
	out = threw(t, b, "def main(input):\n    return \"x\" * 70000\n", `null`)
	assert.Contains(t, out.Message, "larger than 65536 bytes")
	assert.Equal(t, spi.KindOK, eval(t, b, "def main(input):\n    return \"x\" * 60000\n", `null`, generous).Kind)
}

func TestErrorsAreThrown(t *testing.T) {
	for _, tc := range []struct{ name, src, wantName, wantMsg string }{
		{"fail", "def main(input):\n    fail(\"boom ✓\")\n", "fail", "boom ✓"},
		{"fail args", "def main(input):\n    fail(\"a\", 1, [2])\n", "fail", "a 1 [2]"},
		{"fail at top level", "fail(\"early\")\ndef main(input):\n    return 1\n", "fail", "early"},
		{"fail text looks like a limit", "def main(input):\n    fail(\"Starlark computation cancelled: too many steps\")\n", "fail", "Starlark computation cancelled: too many steps"},
		{"syntax", "def main(input)\n    return 1\n", "SyntaxError", "script.star:2:1: got newline, want ':'"},
		{"undefined name", "def main(input):\n    return nope\n", "SyntaxError", "undefined: nope"},
		{"while is off", "def main(input):\n    while True:\n        pass\n", "SyntaxError", "while"},
		{"set is off", "def main(input):\n    return set()\n", "SyntaxError", "set"},
		{"runtime", "def main(input):\n    return 1 + \"a\"\n", "Error", "script.star:2:14: unknown binary op: int + string"},
		{"builtin error", "def main(input):\n    return int(\"x\")\n", "Error", "script.star:2:15: int: invalid literal"},
		{"recursion is off", "def f(n):\n    return f(n)\ndef main(input):\n    return f(1)\n", "Error", "called recursively"},
		{"no main", "def mian(input):\n    return 1\n", "Error", "the script defines no main(input) function"},
		{"main not callable", "main = 3\n", "Error", "main is a int, not a function"},
		{"main arity", "def main():\n    return 1\n", "Error", "accepts no arguments"},
		{"load refused", "load(\"other.star\", \"x\")\ndef main(input):\n    return x\n", "Error", "load is not available"},
		{"frozen globals", "g = []\ndef main(input):\n    g.append(1)\n    return g\n", "Error", "frozen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := threw(t, nil, tc.src, `{}`)
			assert.Equal(t, tc.wantName, out.Name)
			assert.Contains(t, out.Message, tc.wantMsg)
			if tc.wantName == "fail" {
				assert.Equal(t, tc.wantMsg, out.Message, "fail's message is passed as is, without Starlark's prefix")
			}
		})
	}
}

func TestPrintGoesNowhere(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	out := eval(t, newBackend(t, nil), "def main(input):\n    print(\"PRINTED-TO-HOST\")\n    return 1\n", `null`, generous)
	os.Stderr = saved
	require.NoError(t, w.Close())
	leaked, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`1`)), out)
	assert.Empty(t, string(leaked))
}

func TestStepBudgetIsTheCPULimit(t *testing.T) {
	loop := "def main(input):\n    for _ in range(1 << 62):\n        pass\n"
	b := newBackend(t, &starlark.Options{MaxSteps: 10_000})
	assert.Equal(t, spi.Limited(spi.LimitCPU), eval(t, b, loop, `null`, generous))
	// The budget is per run, not per backend: a short script still runs.
	assert.Equal(t, spi.OK(json.RawMessage(`45`)), eval(t, b, "def main(input):\n    n = 0\n    for i in range(10):\n        n += i\n    return n\n", `null`, generous))
	// Exhaustion at module initialisation is the CPU limit too.
	assert.Equal(t, spi.Limited(spi.LimitCPU), eval(t, b, "x = [i for i in range(1 << 62)]\ndef main(input):\n    return 1\n", `null`, generous))
	// Exhaustion inside a callback from a built-in (sorted's key).
	assert.Equal(t, spi.Limited(spi.LimitCPU), eval(t, b, "def k(x):\n    for _ in range(1000):\n        pass\n    return x\ndef main(input):\n    return sorted(range(1000), key=k)\n", `null`, generous))
}

func TestWallClockIsTheWallClockLimit(t *testing.T) {
	loop := "def main(input):\n    for _ in range(1 << 62):\n        pass\n"
	b := newBackend(t, &starlark.Options{MaxSteps: 1 << 62})
	assert.Equal(t, spi.Limited(spi.LimitWallClock), eval(t, b, loop, `null`, spi.Limits{WallClock: 20 * time.Millisecond}))
	// A single long built-in call is stopped at the deadline too, from the
	// caller's point of view (WallClock soft: it finishes in the background).
	assert.Equal(t, spi.Limited(spi.LimitWallClock), eval(t, b, "def main(input):\n    return len(\"x\" * 300000000)\n", `null`, spi.Limits{WallClock: time.Millisecond}))
}

// firstLine is a log sink that closes c when the script logs its first
// line: the signal that the script is running.
type firstLine struct {
	once sync.Once
	c    chan struct{}
}

func (f *firstLine) Log(spi.LogLevel, spi.LogStream, string) bool {
	f.once.Do(func() { close(f.c) })
	return true
}

func TestCancellationReturnsTheContextError(t *testing.T) {
	loop := []byte("def main(input):\n    for _ in range(1 << 62):\n        pass\n")
	b := newBackend(t, &starlark.Options{MaxSteps: 1 << 62})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := b.Evaluate(ctx, spi.Request{Script: loop, Input: json.RawMessage(`null`), Limits: generous})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, spi.Outcome{}, out)

	// Cancelled mid-run: once the script has printed, it is in its loop.
	ctx, cancel = context.WithCancel(context.Background())
	running := firstLine{c: make(chan struct{})}
	go func() { <-running.c; cancel() }()
	out, err = b.Evaluate(ctx, spi.Request{Script: []byte("def main(input):\n    print(\"looping\")\n    for _ in range(1 << 62):\n        pass\n"),
		Input: json.RawMessage(`null`), Limits: generous, Logs: &running})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, spi.Outcome{}, out)

	// A context deadline is not the request's wall clock: it is the
	// context's error, not a limit.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = b.Evaluate(ctx, spi.Request{Script: loop, Input: json.RawMessage(`null`), Limits: generous})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestEveryRunIsFresh(t *testing.T) {
	b := newBackend(t, nil)
	src := "state = {\"runs\": 0}\nstate[\"runs\"] += 1\ndef main(input):\n    input.append(state[\"runs\"])\n    return input\n"
	for range 3 {
		assert.Equal(t, spi.OK(json.RawMessage(`[0,1]`)), eval(t, b, src, `[0]`, generous))
	}
}

func TestBadInputIsAnError(t *testing.T) {
	b := newBackend(t, nil)
	for _, in := range []string{``, `{`, `1 2`, `{"a":}`, `[1,]`, `nul`} {
		_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(echo), Input: json.RawMessage(in), Limits: generous})
		require.Error(t, err, "input %q", in)
		assert.True(t, strings.HasPrefix(err.Error(), "starlark: "), err.Error())
	}
	deep := strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001)
	_, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(echo), Input: json.RawMessage(deep), Limits: generous})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deeper than 10000")
}

func TestJSONModuleWorksAndRefusesDeepText(t *testing.T) {
	assert.Equal(t, `{"a":[1,2],"s":"[[[","e":"{\"k\":[true]}","bad":"fallback"}`, value(t,
		"def main(input):\n    return {\"a\": json.decode('{\"a\":[1,2]}')[\"a\"], \"s\": json.decode('\"[[[\"'),"+
			" \"e\": json.encode({\"k\": [True]}), \"bad\": json.decode(\"{\", default=\"fallback\")}\n", `null`))
	// Brackets inside strings do not count toward the depth.
	assert.Equal(t, `20000`, value(t, "def main(input):\n    return len(json.decode('\"' + \"[\" * 20000 + '\"'))\n", `null`))
	// Unguarded, this overflows the goroutine stack: a fatal error that
	// ends the process (go.starlark.net's decoder recurses per level).
	out := threw(t, nil, "def main(input):\n    return json.decode(\"[\" * 3000000 + \"]\" * 3000000)\n", `null`)
	assert.Contains(t, out.Message, "json.decode: JSON text nests deeper than 10000")
	assert.Equal(t, `1`, value(t, "def main(input):\n    return len(json.decode(\"[\" * 10000 + \"]\" * 10000))\n", `null`))
}

// TestDefaultBudgetStopsFatalNesting: printing a value nested 2,000,000
// deep overflows the goroutine stack, which ends the process (measured
// fatal from about 1.1-1.6 million levels). The default step budget stops
// the script while it is still building the value. With a budget large
// enough to finish building, this test crashes the test binary.
func TestDefaultBudgetStopsFatalNesting(t *testing.T) {
	src := "def main(input):\n    x = ()\n    for _ in range(input // 16):\n" +
		"        x = ((((((((((((((((x,),),),),),),),),),),),),),),),)\n    return len(str(x))\n"
	assert.Equal(t, spi.Limited(spi.LimitCPU), eval(t, newBackend(t, nil), src, `2000000`, generous))
	// The same script at a depth the budget allows runs to the end.
	assert.Equal(t, spi.KindOK, eval(t, newBackend(t, nil), src, `16000`, generous).Kind)
}

// TestConcurrentRunsShareNothingMutable: runs on one backend at once, each
// freezing globals that hold the shared predeclared modules (-race checks
// that freezing them writes nothing shared).
func TestConcurrentRunsShareNothingMutable(t *testing.T) {
	b := newBackend(t, nil)
	src := "j = json\nm = math\nacc = [m.floor(2.5)]\ndef main(input):\n    return j.decode(j.encode([input] + acc))\n"
	done := make(chan spi.Outcome, 8)
	for i := range 8 {
		go func() {
			out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: json.RawMessage(fmt.Sprint(i)), Limits: generous})
			if err != nil {
				out = spi.Infrastructure(err.Error())
			}
			done <- out
		}()
	}
	seen := map[string]bool{}
	for range 8 {
		out := <-done
		require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
		seen[string(out.Value)] = true
	}
	assert.Len(t, seen, 8)
	assert.True(t, seen[`[3,2]`])
}

// TestDeepResultIsHandedOver: a result nested deeper than the effect
// accepts (10,000 levels) is encoded and handed over as JSON text, the
// rule for every engine: the effect refuses it with a typed output limit
// naming the depth (issue 14). 100,000 levels is about what the default
// step budget lets a script build (190,000 runs out of steps).
func TestDeepResultIsHandedOver(t *testing.T) {
	b := newBackend(t, nil)
	for _, depth := range []int{10_001, 20_000, 100_000} {
		src := fmt.Sprintf("def main(input):\n    x = []\n    for _ in range(%d):\n        x = [x]\n    return x\n", depth)
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(src), Input: json.RawMessage(`null`), Limits: generous})
		require.NoError(t, err)
		require.Equal(t, spi.KindOK, out.Kind, "depth %d: %s", depth, out.Message)
		assert.True(t, string(out.Value) == strings.Repeat("[", depth+1)+strings.Repeat("]", depth+1), "depth %d: not the nested list", depth)
	}
}
