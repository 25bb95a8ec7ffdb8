package jsfront

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evaluate runs src in a new goja runtime as the goja backend will: the
// completion value, awaited when it is a promise (goja runs the job queue
// when the top-level call returns), as JSON text, or "undefined".
func evaluate(t *testing.T, src []byte) (string, error) {
	t.Helper()
	rt := goja.New()
	v, err := rt.RunString(string(src))
	if err != nil {
		return "", err
	}
	if p, ok := v.Export().(*goja.Promise); ok {
		switch p.State() {
		case goja.PromiseStateRejected:
			return "", errors.New("rejected: " + p.Result().String())
		case goja.PromiseStatePending:
			return "", errors.New("pending")
		}
		v = p.Result()
	}
	if goja.IsUndefined(v) {
		return "undefined", nil
	}
	if _, ok := goja.AssertFunction(v); ok {
		return "a function", nil
	}
	b, err := json.Marshal(v.Export())
	require.NoError(t, err)
	return string(b), nil
}

func TestUnchangedWithoutTopLevelAwait(t *testing.T) {
	for _, src := range []string{
		``,
		`1 + 1`,
		`"await"`,
		`// await Promise.resolve(1)
1`,
		`/* await x */ 2`,
		"`${'await'}`",
		`async function f() { return await g() } f`,
		`const f = async () => await 1; f`,
		`(async () => { const x = await Promise.resolve(41); return x + 1 })()`,
		`var await = 3; await`,
		`function await(x) { return x } await(1)`,
		`class A { async m() { await 1 } } 1`,
		`async function g() { for await (const x of xs) {} } 1`,
		`const o = { async m() { return await 1 } }; 1`,
		`x.await`,
		`({ await: 1 }).await`,
		`foo(; // await`,
		`return await 1`,
		`if (x) { return await 1 }`,
		`label: { await: 1 }`,
	} {
		in := []byte(src)
		out, wrapped := Prepare(in)
		assert.False(t, wrapped, "%q", src)
		assert.Equal(t, src, string(out), "%q", src)
		if len(in) > 0 {
			assert.Same(t, &in[0], &out[0], "%q: the very slice", src)
		}
	}
}

func TestWrappedForm(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"await Promise.resolve(5)",
			"(async () => {" + assign + "await Promise.resolve(5)" + valueSuffix},
		{"const x = await f()\nx + 1;",
			"(async () => {const x = await f()\n" + assign + "x + 1;" + valueSuffix},
		{"await f(); (a, b)",
			"(async () => {await f(); (a, " + assign + "b)" + valueSuffix},
		{"await f(); a, (b)",
			"(async () => {await f(); a, " + assign + "(b)" + valueSuffix},
		{"await f()\n;((x)) // done",
			"(async () => {" + "await f()\n;" + assign + "((x)) // done" + valueSuffix},
		{"for await (const x of xs) {}",
			"(async () => {for await (const x of xs) {}" + plainSuffix},
		{"await f(); for (;;) {}",
			"(async () => {await f(); for (;;) {}" + plainSuffix},
		{"await f(); x; for (;;) {}",
			"(async () => {await f(); x; for (;;) {}" + plainSuffix},
	} {
		out, wrapped := Prepare([]byte(tc.in))
		assert.True(t, wrapped, "%q", tc.in)
		assert.Equal(t, tc.out, string(out), "%q", tc.in)
	}
}

func TestCompletionValue(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"await Promise.resolve(5)", "5"},
		{"const x = await Promise.resolve(41); x + 1", "42"},
		{"const x = await Promise.resolve(41)\nx + 1", "42"},
		{"let a = await 1\nlet b = await 2\n;[a, b]", "[1,2]"},
		{"await 1; ({ a: 1, b: [await 2] })", `{"a":1,"b":[2]}`},
		{"await 1; 1, 2, 3", "3"},
		{"await 1; (1, 2, 3)", "3"},
		{"const v = await 7; v; var later = 1; function f() {} class C {}", "7"},
		{"const v = await 7; v;;;", "7"},
		{"const v = await 7; v; let x = 3", "7"},
		{"const v = await 7; v; debugger", "7"},
		{"await 1; if (true) { 'yes' } else { 'no' }", `"yes"`},
		{"await 1; if (false) { 'yes' } else { 'no' }", `"no"`},
		{"await 1; if (false) 'yes'; else 'no'", `"no"`},
		{"await 1; if (false) ('yes'); else ('no')", `"no"`},
		{"await 1; if (false) 'yes'", "undefined"},
		{"await 1; 5; if (false) 'yes'", "undefined"},
		{"await 1; if (true) { 1 } /* c */ else if (x) { 2 } else { 3 }", "1"},
		{"await 1; { 'block' }", `"block"`},
		{"await 1; { 'block'; let z = 1 }", `"block"`},
		{"try { await Promise.reject(new Error('x')) } catch (e) { e.message }", `"x"`},
		{"try { await 4 } catch (e) { e.message }", "4"},
		{"try { await 4 } finally { 9 }", "4"},
		{"await 1; for (let i = 0; i < 3; i++) { i }", "undefined"},
		{"await 1; console", "{}"}, // goja has no console; a ReferenceError would fail below
		{"'use strict'; await 1; this === globalThis", "true"},
		{"await 1\n// the end", "1"},
		{"await 1 /* the end */", "1"},
		{"const f = async n => n * 2\nawait f(21)", "42"},
		{"let s = 0; for await (const x of [1, 2, 3]) { s += x } s", "6"},
		{"var x = await 1; typeof globalThis.x", `"undefined"`},
		{"await null\nnull", "null"},
		{"await 0;\n`tpl ${1 + 1}`", `"tpl 2"`},
		{"await 0;\n/re/.test('re')", "true"},
		{"await 0\n!function () { return 1 }()", "false"},
		{"await 0\nx => x", "a function"},
		{"await 0;\nconst d = new Date();\nd instanceof Date", "true"},
		{"await 0;\nif (new Date()) 1; else 2", "1"},
		{"await 0; var a = 1\na ++\n;(a)", "2"},
	} {
		if strings.Contains(tc.src, "console") {
			continue // goja has no console
		}
		if strings.Contains(tc.src, "for await") {
			// goja's compiler lacks for-await; the front end's part is
			// checked on the source (TestWrappedForm).
			continue
		}
		out, wrapped := Prepare([]byte(tc.src))
		require.True(t, wrapped, "%q", tc.src)
		got, err := evaluate(t, out)
		if assert.NoError(t, err, "%q\n%s", tc.src, out) {
			assert.Equal(t, tc.want, got, "%q\n%s", tc.src, out)
		}
	}
}

// TestDifferentialCompletion runs classic scripts as they are and, with an
// await put in front, through the front end: for every statement shape the
// front end follows, the awaited value is the classic completion value.
func TestDifferentialCompletion(t *testing.T) {
	for _, s := range []string{
		"1",
		"1;",
		"1; 2",
		"1\n2\n",
		"'a' + 'b'",
		"[1, 2].map(x => x * 2)",
		"({a: 1})",
		"(1, 2)",
		"1, 2",
		"var o = {n: 3}; o.n",
		"var o = {n: 3}; o.n; var p = 4",
		"let v = 1; v; function f() {}",
		"if (1) 2; else 3",
		"if (0) 2; else 3",
		"if (0) { 2 } else if (1) { 3 } else { 4 }",
		"if (0) { 2 } else if (0) { 3 } else { 4 }",
		"if (1) { 1; if (0) { 2 } }",
		"{ 1 } { 2 }",
		"{ 1; { 2; } }",
		"try { 1 } catch (e) { 2 }",
		"try { throw 1 } catch (e) { e + 1 }",
		"try { throw 1 } catch (e) { e + 1 } finally { 9 }",
		"try { 1 } finally { 2 }",
		"x = 5 // trailing comment",
		"x = (5) /* c */ ;",
		"((1)) + ((2))",
		"(function () { return 7 })()",
		"(() => 8)()",
		"typeof undefinedName",
		"void 0",
		"null",
		"'use strict'; 1",
		"`a${1}b`",
		"1 ? 2 : 3",
		"a = b = 3",
		"JSON.stringify({k: [1, 2]})",
		"new Date(0).getTime()",
	} {
		classic, err := evaluate(t, []byte(s))
		require.NoError(t, err, "%q", s)
		src := "await null;" + s
		out, wrapped := Prepare([]byte(src))
		require.True(t, wrapped, "%q", src)
		got, err := evaluate(t, out)
		require.NoError(t, err, "%q\n%s", src, out)
		assert.Equal(t, classic, got, "%q\n%s", src, out)
	}
}

func TestLineNumbersStay(t *testing.T) {
	src := "const a = await Promise.resolve(1)\n\n  null.boom\n"
	out, wrapped := Prepare([]byte(src))
	require.True(t, wrapped)
	assert.Equal(t, strings.Count(src, "\n"), strings.Count(string(out), "\n")-1, "one line after the script, none before")
	rt := goja.New()
	v, err := rt.RunScript("script.js", string(out))
	require.NoError(t, err)
	p := v.Export().(*goja.Promise)
	require.Equal(t, goja.PromiseStateRejected, p.State())
	stack := p.Result().ToObject(rt).Get("stack").String()
	assert.Contains(t, stack, "script.js:3:", "the error is on the user's line 3: %s", stack)
}

func TestSyntaxErrors(t *testing.T) {
	// A top-level-await script with a later error is wrapped, so the
	// engine reports the real error on the user's line.
	src := "const a = await f()\nlet b = (;\nb"
	out, wrapped := Prepare([]byte(src))
	require.True(t, wrapped)
	assert.Equal(t, Prefix+src+plainSuffix, string(out))
	_, err := goja.Compile("script.js", string(out), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "script.js: Line 2:", "the user's line")

	// An error before any await: left as it is.
	src = "let b = (;\nawait f()"
	out, wrapped = Prepare([]byte(src))
	assert.False(t, wrapped)
	assert.Equal(t, src, string(out))

	// Neither reading parses, and the classic one got further: as it is.
	src = "var await = 1;\nfoo(;"
	out, wrapped = Prepare([]byte(src))
	assert.False(t, wrapped)
	assert.Equal(t, src, string(out))
}

func TestBoundsLeaveTheScript(t *testing.T) {
	deep := "await 1; " + strings.Repeat("(", MaxNesting+1) + "1" + strings.Repeat(")", MaxNesting+1)
	out, wrapped := Prepare([]byte(deep))
	assert.False(t, wrapped, "nesting past MaxNesting is not parsed")
	assert.Equal(t, deep, string(out))

	shallow := "await 1; " + strings.Repeat("(", MaxNesting) + "1" + strings.Repeat(")", MaxNesting)
	_, wrapped = Prepare([]byte(shallow))
	assert.True(t, wrapped, "MaxNesting itself is parsed")

	big := "await 1; " + strings.Repeat(" ", MaxBytes)
	out, wrapped = Prepare([]byte(big))
	assert.False(t, wrapped, "past MaxBytes is not parsed")
	assert.Equal(t, big, string(out))

	bad := []byte("await 1; '\xff'")
	out, wrapped = Prepare(bad)
	assert.False(t, wrapped, "invalid UTF-8 is not parsed")
	assert.Equal(t, bad, out)
}

// TestSourceMapCommentOpensNothing plants a FIFO and names it in a
// sourceMappingURL comment: with source maps on, goja's parser would open
// it (relative to the working directory), and opening a FIFO with no
// writer blocks forever. Prepare parses the script twice (the reading and
// the check) and must return.
func TestSourceMapCommentOpensNothing(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "map")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, fifo)
	require.NoError(t, err)
	comment := "//# sourceMappingURL=" + filepath.ToSlash(rel)
	for _, src := range []string{"await 1; 2\n" + comment, "await 1; (\n" + comment, "1\n" + comment + " await"} {
		done := make(chan bool, 1)
		go func() {
			_, wrapped := Prepare([]byte(src))
			done <- wrapped
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			// The goroutine stays blocked on the FIFO; the test fails.
			t.Fatalf("Prepare opened the file named in the comment: %q", src)
		}
	}
}

func TestHiddenNameInTheScript(t *testing.T) {
	src := "await 1; var " + completionName + " = 5; " + completionName
	out, wrapped := Prepare([]byte(src))
	require.True(t, wrapped)
	assert.Equal(t, Prefix+src+plainSuffix, string(out), "no completion assignment")
}

func TestVerifyRefusesMisplacedSites(t *testing.T) {
	src := []byte("await f(); (a + b) * c")
	masked, _ := mask(src)
	prog, err := parse(Prefix + string(masked) + plainSuffix)
	require.NoError(t, err)
	sites, ok := completionSites(src, arrowBody(prog).List)
	require.True(t, ok)
	require.Len(t, sites, 1)
	assert.True(t, verify(wrap(masked, sites), sites))

	// Placed after the opening parenthesis, as goja's own offset of the
	// expression would put it: it parses, but assigns the wrong thing.
	bad := []site{{at: sites[0].at + 1, lo: sites[0].lo, hi: sites[0].hi}}
	assert.False(t, verify(wrap(masked, bad), bad))
}

func TestTopLevelScan(t *testing.T) {
	for _, tc := range []struct {
		src        string
		await, ret bool
	}{
		{"await 1", true, false},
		{"if (x) { while (y) { await z } }", true, false},
		{"class A extends (await base()) {}", true, false},
		{"f(async () => { await 1 })", false, false},
		{"class A { static { 1 } m() { return 1 } }", false, false},
		{"class A { x = 1 }", false, false},
		{"function f() { return 1 }", false, false},
		{"return 1", false, true},
		{"for await (const x of y) {}", true, false},
		{"async function f() { for await (const x of y) {} }", false, false},
	} {
		masked, forAwait := mask([]byte(tc.src))
		prog, err := parse(Prefix + string(masked) + plainSuffix)
		require.NoError(t, err, "%q", tc.src)
		f := scanTop(arrowBody(prog).List, forAwait)
		assert.Equal(t, tc.await, f.await, "%q await", tc.src)
		assert.Equal(t, tc.ret, f.ret, "%q return", tc.src)
	}
}
