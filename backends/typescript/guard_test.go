package typescript

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// inner is a JavaScript backend that counts its runs, records the wall
// clock it is given, and answers null.
type inner struct {
	mu   sync.Mutex
	runs int
	wall time.Duration
}

func (*inner) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, FreshPerRun: true}
}

func (i *inner) Evaluate(_ context.Context, req spi.Request) (spi.Outcome, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.runs++
	i.wall = req.Limits.WallClock
	return spi.OK(json.RawMessage("null")), nil
}

func wrapInner(t *testing.T, opts *Options) (*Backend, *inner) {
	t.Helper()
	var in inner
	b, err := Wrap(&in, opts)
	require.NoError(t, err)
	return b, &in
}

// bombs are scripts of about 600 KB whose nesting overflowed esbuild's
// 1 GB Go stack (a fatal error that ended the test binary) before the
// guard: each shape nests 200,000 levels or more.
func bombs() map[string]string {
	r := strings.Repeat
	const n = 200000
	return map[string]string{
		"not":           r("!", 3*n) + "1",
		"negation":      r("- ", n) + "1",
		"typeof":        r("typeof ", n) + "1",
		"await":         r("await ", n) + "1",
		"new":           r("new ", n) + "X",
		"arrow":         r("a=>", n) + "1",
		"generic arrow": "x=" + r("<T>()=>", n) + "1",
		"assignment":    r("a=", n) + "1",
		"ternary":       r("a?1:", n) + "1",
		"power":         r("a**", n) + "1",
		"member":        "a" + r(".a", n),
		"call":          "a" + r("()", n),
		"index":         "a" + r("[0]", n),
		"tagged":        "a" + r("`,`", n),
		"template":      r("`${", n) + "1" + r("}`", n),
		"yield":         "function*g(){" + r("yield ", n) + "1}",
		"parentheses":   r("(", 3*n) + "1" + r(")", 3*n),
	}
}

// TestNestingBombsAreRefusedBeforeTheTransform: without the guard, each
// bomb ends the test binary with "fatal error: stack overflow".
func TestNestingBombsAreRefusedBeforeTheTransform(t *testing.T) {
	b, in := wrapInner(t, nil)
	for name, script := range bombs() {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
		require.NoError(t, err, name)
		assert.Equal(t, spi.KindThrew, out.Kind, name)
		assert.Equal(t, "SyntaxError", out.Name, name)
		assert.Equal(t, fmt.Sprintf("typescript: the script is nested too deeply or is too long to transform: it has more than %d brackets, operators and keywords", MaxSteps), out.Message, name)
	}
	assert.Zero(t, in.runs)
	n, _ := b.cache.len()
	assert.Zero(t, n, "a refusal is not cached")
}

// TestTheDeepestAcceptedScriptsTransform: scripts just under the bounds,
// of the costliest shapes measured, transform (the bounds leave esbuild a
// wide margin).
func TestTheDeepestAcceptedScriptsTransform(t *testing.T) {
	b, in := wrapInner(t, nil)
	for _, script := range []string{
		strings.Repeat("!", MaxSteps-1) + "1",
		strings.Repeat("a=>", MaxScopes) + "1",
	} {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
		require.NoError(t, err)
		assert.Equal(t, spi.KindOK, out.Kind, out.Message)
	}
	assert.Equal(t, 2, in.runs)
}

func TestScopeBombsAreRefused(t *testing.T) {
	b, in := wrapInner(t, nil)
	for name, script := range map[string]string{
		// 3 KB: 8 s of the renamer's time without the guard.
		"arrows":    strings.Repeat("a=>", 1000) + "1",
		"functions": strings.Repeat("function f(a){", 1000) + strings.Repeat("}", 1000),
	} {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
		require.NoError(t, err, name)
		assert.Equal(t, spi.Threw("SyntaxError", fmt.Sprintf("typescript: the script nests brackets and functions deeper than %d levels", MaxScopes)), out, name)
	}
	assert.Zero(t, in.runs)
}

// enumDoubling is an enum whose members double a string: esbuild folds
// it into a string of 2^(n+1) bytes (n = 30 asks for 2 GiB).
func enumDoubling(n int) string {
	var b strings.Builder
	b.WriteString("enum E { a0 = 'xx'")
	for i := 1; i < n; i++ {
		b.WriteString(", a" + strconv.Itoa(i) + " = a" + strconv.Itoa(i-1) + " + a" + strconv.Itoa(i-1))
	}
	b.WriteString(" }\nE.a0")
	return b.String()
}

func TestEnumFoldingBombsAreRefused(t *testing.T) {
	b, in := wrapInner(t, nil)
	for name, script := range map[string]string{
		// Small enough to transform (a 8 MiB string) without the guard.
		"doubling":              enumDoubling(22),
		"doubling across enums": "enum A { x = 'ab' }\nenum B { y = A.x + A.x, z = y + y }\nB.z",
		"doubling by template":  "enum E { a = 'ab', b = `${a}${a}` }\nE.b",
		"long string inlined":   "enum E { a = '" + strings.Repeat("x", 300) + "' }\n" + strings.Repeat("E.a;", 100),
		"division":              "enum E { a = 10 / 2 }\nE.a",
	} {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
		require.NoError(t, err, name)
		assert.Equal(t, spi.KindThrew, out.Kind, name)
		assert.Equal(t, "SyntaxError", out.Name, name)
		assert.True(t, strings.HasPrefix(out.Message, "typescript: "), name)
	}
	assert.Zero(t, in.runs)
}

func TestOrdinaryEnumsTransform(t *testing.T) {
	b, in := wrapInner(t, nil)
	for _, script := range []string{
		"enum Color { Red, Green = 'g', Blue = \"b\" }\nColor.Green",
		"enum N { A = 1, B = A + 1, C = B << 2, D = A | C }\nN.D",
		"const enum S { A = 'a', /* a } comment + */ B = 'b}' }\nS.B",
		"enum E { A = '" + strings.Repeat("x", maxEnumString) + "' }\nE.A",
		"const s = 'enum'; s + s", // the word in a string, without a body
	} {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
		require.NoError(t, err, script)
		assert.Equal(t, spi.KindOK, out.Kind, "%s: %s", script, out.Message)
	}
	assert.Equal(t, 5, in.runs)
}

// blocking is a transform that waits until released.
type blocking struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocking() *blocking {
	return &blocking{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (f *blocking) transform(script []byte) ([]byte, *spi.Outcome) {
	f.entered <- struct{}{}
	<-f.release
	return append([]byte(nil), script...), nil
}

// TestATransformPastTheWallClockIsTheWallClockLimit: the transform is
// charged to the run's wall clock, is not cached when given up on, and
// holds its slot until it ends, so a run that finds no slot waits on its
// own wall clock.
func TestATransformPastTheWallClockIsTheWallClockLimit(t *testing.T) {
	b, in := wrapInner(t, &Options{MaxTransforms: 1})
	slow := newBlocking()
	b.transform = slow.transform
	req := func(script string) spi.Request {
		return spi.Request{Script: []byte(script), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Millisecond}}
	}

	out, err := b.Evaluate(context.Background(), req("1"))
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
	<-slow.entered // the abandoned transform holds the only slot

	out, err = b.Evaluate(context.Background(), req("2"))
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), out)
	assert.Empty(t, slow.entered, "no second transform ran")

	close(slow.release)
	b.slots <- struct{}{} // the abandoned transform ended and freed its slot
	<-b.slots
	n, _ := b.cache.len()
	assert.Zero(t, n, "a transform given up on is not cached")
	assert.Zero(t, in.runs)

	// A transform in time runs, and the inner backend gets the rest of
	// the wall clock.
	out, err = b.Evaluate(context.Background(), spi.Request{Script: []byte("3"), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, spi.KindOK, out.Kind)
	assert.Equal(t, 1, in.runs)
	assert.Greater(t, in.wall, time.Duration(0))
	assert.LessOrEqual(t, in.wall, time.Hour)
	n, _ = b.cache.len()
	assert.Equal(t, 1, n)
}

func TestATransformStopsWaitingOnTheContext(t *testing.T) {
	b, _ := wrapInner(t, nil)
	slow := newBlocking()
	b.transform = slow.transform
	defer close(slow.release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-slow.entered
		cancel()
	}()
	_, err := b.Evaluate(ctx, spi.Request{Script: []byte("1"), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestATransformPanicIsInfrastructure(t *testing.T) {
	b, _ := wrapInner(t, nil)
	b.transform = func([]byte) ([]byte, *spi.Outcome) { panic("esbuild bug") }
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte("1"), Input: []byte("null"), Limits: spi.Limits{WallClock: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, spi.Infrastructure("typescript: the transform panicked"), out)
}
