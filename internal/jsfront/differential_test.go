package jsfront

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run evaluates src in a fresh goja runtime, with an input, a host whose
// calls answer their argument and a console that prints nothing, and
// describes how it ended: the completion value (awaited when it is a
// promise), what it threw, or that it did not compile.
func run(t *testing.T, src string) string {
	t.Helper()
	rt := goja.New()
	rt.SetMaxCallStackSize(2000)
	rt.SetTimeSource(func() time.Time { return time.Unix(946684800, 0) })
	_, err := rt.RunString(`
var input = {mode: "ok", n: 1, text: "t", list: [1, 2], message: "m", fail: false, url: "http://x"};
var host = {probe: function (x) { return x }, fails: function (x) { throw new Error("host: " + x) }};
var console = {log: function () {}, warn: function () {}, error: function () {}};
function __describe(v) {
	try {
		var t = typeof v;
		if (t === "function" || t === "symbol") return t + ":" + String(v);
		return t + ":" + JSON.stringify(v);
	} catch (e) { return typeof v + ":?" }
}`)
	require.NoError(t, err)
	describe, _ := goja.AssertFunction(rt.Get("__describe"))
	stop := time.AfterFunc(time.Minute, func() { rt.Interrupt("too long") }) // a guard only: every script here ends at once
	defer stop.Stop()
	v, err := rt.RunString(src)
	if err != nil {
		if ex, ok := err.(*goja.Exception); ok {
			return "throw:" + ex.Value().String()
		}
		if _, ok := err.(*goja.InterruptedError); ok {
			t.Fatalf("did not end: %q", src)
		}
		return "does not compile"
	}
	if p, ok := v.Export().(*goja.Promise); ok {
		switch p.State() {
		case goja.PromiseStateRejected:
			return "throw:" + p.Result().String()
		case goja.PromiseStatePending:
			return "pending"
		}
		v = p.Result()
	}
	d, err := describe(goja.Undefined(), v)
	require.NoError(t, err)
	return d.String()
}

// mayBeUndefined reports whether the documented completion rules (the
// package documentation) let a wrapped script's value be undefined where
// the classic script has one: its deciding statement, or one it leads to,
// is not an expression statement, a block, an if or a try.
func mayBeUndefined(src string) bool {
	prog, err := parse(src)
	if err != nil {
		return true
	}
	var list func([]ast.Statement) bool
	var stmt func(ast.Statement) bool
	list = func(l []ast.Statement) bool {
		k := len(l) - 1
		for k >= 0 && emptyCompletion(l[k]) {
			k--
		}
		return k < 0 || stmt(l[k])
	}
	stmt = func(s ast.Statement) bool {
		switch n := s.(type) {
		case *ast.ExpressionStatement:
			return false
		case *ast.BlockStatement:
			return list(n.List)
		case *ast.IfStatement:
			return stmt(n.Consequent) || n.Alternate != nil && stmt(n.Alternate)
		case *ast.TryStatement:
			return list(n.Body.List) || n.Catch != nil && list(n.Catch.Body.List)
		}
		return true
	}
	return list(prog.Body)
}

// compare runs the classic script body (with 0 where the wrapped one has
// await 0) and the wrapped one through the front end: they end the same,
// or the rules let the wrapped value be undefined. It reports whether
// both gave the same value, not undefined.
func compare(t *testing.T, name, classic, withAwait string) (sameValue bool) {
	t.Helper()
	out, wrapped := Prepare([]byte(withAwait))
	want, got := run(t, classic), run(t, string(out))
	if !wrapped {
		// Only a syntax error the classic reading meets first leaves the
		// script as it is (the package documentation).
		assert.True(t, strings.HasPrefix(want, "throw:SyntaxError") && strings.HasPrefix(got, "throw:SyntaxError"), "%s: %q", name, withAwait)
		return false
	}
	if want == got {
		return !strings.HasPrefix(want, "throw:") && want != "undefined:undefined"
	}
	if strings.HasPrefix(want, "throw:SyntaxError") && strings.HasPrefix(got, "throw:SyntaxError") {
		return false // a syntax error's position differs: the wrapped script has more on its lines
	}
	if got == "undefined:undefined" && mayBeUndefined(classic) {
		return false
	}
	assert.Equal(t, want, got, "%s:\n%s\nwrapped:\n%s", name, classic, out)
	return false
}

// neverEnd names the fixtures that never end or exhaust the host by
// design; the rest are compared.
var neverEnd = map[string]bool{
	"abort_mid_run.js": true, "allocation_bomb.js": true, "cpu_budget.js": true, "deep_recursion.js": true,
	"runaway_loop.js": true, "runaway_native.js": true, "host_loop.js": true,
}

// TestDifferentialRealScripts: every fixture and workload that runs as a
// classic script gives the same result with an await put in front of it,
// and at each of its top-level statement boundaries, through the front
// end.
func TestDifferentialRealScripts(t *testing.T) {
	n := 0
	for _, pattern := range []string{"../../fixtures/javascript/*.js", "../../bench/workloads/*.js", "../../backends/*/testdata/*.js"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			base := filepath.Base(f)
			if neverEnd[base] || topLevelAwait[base] {
				continue
			}
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			src := string(b)
			compare(t, f, "0;\n"+src, "await 0;\n"+src)
			if prog, err := parse(src); err == nil {
				for _, st := range prog.Body {
					at := int(st.Idx0()) - 1 // parse had no prefix
					if at < 0 || at > len(src) {
						continue
					}
					if _, err := parse(src[:at] + "0;\n" + src[at:]); err == nil { // not inside a statement's parentheses
						compare(t, f, src[:at]+"0;\n"+src[at:], src[:at]+"await 0;\n"+src[at:])
					}
				}
			}
			n++
		}
	}
	require.Greater(t, n, 15, "the fixtures were found")
}

// TestDifferentialGenerated compares a few hundred generated programs the
// same way: mixes of declarations, new expressions, calls, ifs, blocks,
// try/catch, loops, lines without semicolons, regular expressions,
// template literals and comments.
func TestDifferentialGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 9))
	same := 0
	for i := range 400 {
		g := &gen{r: r}
		stmts := g.program()
		src := strings.Join(stmts, "")
		out, wrapped := Prepare([]byte(src))
		require.False(t, wrapped, "%q", src)
		require.Equal(t, src, string(out))
		if compare(t, fmt.Sprintf("program %d", i), "0;\n"+src, "await 0;\n"+src) {
			same++
		}
		k := r.IntN(len(stmts) + 1)
		head, tail := strings.Join(stmts[:k], ""), strings.Join(stmts[k:], "")
		if compare(t, fmt.Sprintf("program %d, await before statement %d", i, k), head+"\n0;\n"+tail, head+"\nawait 0;\n"+tail) {
			same++
		}
	}
	t.Logf("%d of 800 runs gave the same value, not undefined, both ways", same)
	require.Greater(t, same, 300, "too few programs give a value to compare")
}

// gen writes random programs; each statement comes with its separator.
type gen struct {
	r     *rand.Rand
	names []string // top-level names declared so far
	next  int
}

func (g *gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *gen) program() []string {
	out := []string{g.pick("", "class K { constructor(a) { this.a = a } }\n", "function f(x) { return [x] }\n")}
	for range 1 + g.r.IntN(7) {
		out = append(out, g.statement(0)+g.sep())
	}
	return out
}

// sep ends a statement: a semicolon, a line break alone (automatic
// semicolon insertion, or none where the next line continues the
// expression), or a comment.
func (g *gen) sep() string {
	return g.pick(";\n", "\n", "; ", ";", " // c ( ;\n", " /* ) ; ( */\n", "\n\n")
}

func (g *gen) name() string {
	if len(g.names) == 0 {
		return "Math.PI"
	}
	return g.names[g.r.IntN(len(g.names))]
}

func (g *gen) expr(depth int) string {
	if depth > 2 {
		return g.pick("1", "'s'", "null", "true", g.name())
	}
	d := depth + 1
	switch g.r.IntN(22) {
	case 0:
		return g.pick("new Date()", "new Date(0)", "new Array()", "new Map()", "new Object", "new Set([1, 2])", "new Error('e')")
	case 1:
		return g.pick("new K()", "new K(1)", "new K", "new (class { })()")
	case 2:
		return "Math.max(" + g.expr(d) + ", 2)"
	case 3:
		return "[1, 2].map(x => x * 2)"
	case 4:
		return "(function () { return " + g.expr(d) + " })()"
	case 5:
		return "`t${" + g.expr(d) + "}u`"
	case 6:
		return g.pick("/a+b/g.test('aab')", "'abc'.replace(/b/, 'x')", "/[/]/.source", "/x/")
	case 7:
		return "(" + g.expr(d) + ")"
	case 8:
		return g.expr(d) + ", " + g.expr(d)
	case 9:
		return "({a: " + g.expr(d) + "})"
	case 10:
		return g.expr(d) + " + " + g.expr(d)
	case 11:
		return "typeof " + g.expr(d)
	case 12:
		return g.pick("f(1)", "f()", "f(1)[0]")
	case 13:
		return "x => x"
	case 14:
		return g.expr(d) + " ? " + g.expr(d) + " : " + g.expr(d)
	case 15:
		return "[" + g.expr(d) + "]"
	case 16:
		return "JSON.stringify(" + g.expr(d) + ")"
	default:
		return g.pick("1", "2.5", "'str'", "null", "true", "undefined", g.name(), "void 0", "-1")
	}
}

func (g *gen) block(depth int) string {
	var b strings.Builder
	b.WriteString("{ ")
	for range g.r.IntN(3) {
		b.WriteString(g.statement(depth + 1))
		b.WriteString(g.sep())
	}
	b.WriteString("}")
	return b.String()
}

func (g *gen) statement(depth int) string {
	n := 14
	if depth > 1 {
		n = 5
	}
	switch g.r.IntN(n) {
	case 0, 1, 2:
		return g.expr(0)
	case 3:
		name := fmt.Sprintf("v%d", g.next)
		g.next++
		decl := g.pick("var", "let", "const") + " " + name + " = " + g.expr(0)
		if depth == 0 {
			g.names = append(g.names, name)
		}
		return decl
	case 4:
		return ";"
	case 5:
		s := "if (" + g.expr(1) + ") " + g.pick(g.block(depth), g.expr(1)+";")
		if g.r.IntN(2) == 0 {
			s += g.pick(" else ", "\nelse ") + g.pick(g.block(depth), g.statement(depth+1))
		}
		return s
	case 6:
		return g.block(depth)
	case 7:
		s := "try " + g.pick(g.block(depth), "{ throw new Error('x') }", "{ 1; null.x }")
		switch g.r.IntN(3) {
		case 0:
			s += " catch (e) " + g.pick(g.block(depth), "{ e.message }")
		case 1:
			s += " catch " + g.block(depth) + " finally { 9 }"
		default:
			s += " finally " + g.block(depth)
		}
		return s
	case 8:
		return g.pick("for (let i = 0; i < 2; i++) { i }", "for (const k in {a: 1}) k", "for (const x of [1, 2]) { x }",
			"while (false) ;", "do { 3 } while (false)", "switch (1) { case 1: 'one' }", "l: { 4; break l }")
	case 9:
		return "x" + fmt.Sprint(depth) + " = " + g.expr(0)
	case 10:
		return g.pick("debugger", "function g() {}", "class L {}")
	case 11:
		return "(" + g.expr(0) + ")"
	case 12:
		return g.name() + g.pick("++", " ++", "--")
	default:
		return g.pick("`line ${1}`", "[3, 4].length", "/re/.test('re')", "-x0", "+1")
	}
}
