package jsfront

import (
	"bytes"
	"regexp"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// Bounds of the scripts the front end reads. A script past either is
// returned unchanged: it runs as a classic script, without top-level
// await. goja's parser recurses on the Go stack, and a Go stack overflow
// ends the process, so the front end never parses what the goja backend
// would refuse to parse.
const (
	// MaxBytes is the largest script the front end parses (256 KiB, the
	// goja backend's largest script).
	MaxBytes = 256 << 10
	// MaxNesting is the deepest bracket nesting the front end parses,
	// counted as the goja backend counts it (every bracket, in strings
	// and comments too).
	MaxNesting = 1000
)

// The text the front end adds. Prefix sits on the script's first line,
// before its first byte, so no line of the script moves; the rest follows
// the script's last byte.
const (
	// Prefix opens the async arrow function a script with top-level
	// await runs in.
	Prefix = "(async () => {"
	// completionName is the function-local variable that holds the
	// completion value (a script that names it is never instrumented).
	completionName = "__sandbank_completion__"
	assign         = completionName + " = "
	valueSuffix    = "\n;return " + completionName + "; var " + completionName + "})()"
	plainSuffix    = "\n})()"
)

// Prepare returns the JavaScript an engine evaluates for script, and
// whether it wrapped it (see the package documentation). A script without
// top-level await is returned unchanged: the very slice it was given.
func Prepare(script []byte) ([]byte, bool) {
	if !bytes.Contains(script, []byte("await")) || len(script) > MaxBytes ||
		!utf8.Valid(script) || Nesting(script, MaxNesting) > MaxNesting {
		return script, false
	}
	masked, forAwait := mask(script)
	prog, err := parse(Prefix + string(masked) + plainSuffix)
	if err != nil {
		return syntaxFallback(script, err)
	}
	body := arrowBody(prog)
	if body == nil {
		return script, false
	}
	f := scanTop(body.List, forAwait)
	if !f.await || f.ret {
		// No top-level await: a classic script. A top-level return is
		// left to the engine, which refuses it as a script would.
		return script, false
	}
	if bytes.Contains(script, []byte(completionName)) {
		return wrap(script, nil), true
	}
	sites, ok := completionSites(script, body.List)
	if !ok {
		return wrap(script, nil), true
	}
	if !verify(wrap(masked, sites), sites) {
		return wrap(script, nil), true
	}
	return wrap(script, sites), true
}

// wrap builds the async arrow function around src, with the completion
// assignment inserted at each site; without sites the function returns
// undefined.
func wrap(src []byte, sites []site) []byte {
	suffix := plainSuffix
	if sites != nil {
		suffix = valueSuffix
	}
	out := make([]byte, 0, len(Prefix)+len(src)+len(sites)*len(assign)+len(suffix))
	out = append(out, Prefix...)
	last := 0
	for _, s := range sites {
		out = append(out, src[last:s.at]...)
		out = append(out, assign...)
		last = s.at
	}
	out = append(out, src[last:]...)
	return append(out, suffix...)
}

// forAwaitRE finds the for-await loops goja's parser cannot read.
var forAwaitRE = regexp.MustCompile(`\bfor\s+await\b`)

// mask returns a copy of src in which the await of every "for await" is
// blanked (same length, so every offset stays), and the offsets of those
// for keywords. It is only parsed, never run: a blanked match inside a
// string or a comment changes nothing the parse is used for.
func mask(src []byte) ([]byte, map[int]bool) {
	out := bytes.Clone(src)
	at := map[int]bool{}
	for _, m := range forAwaitRE.FindAllIndex(src, -1) {
		at[m[0]] = true
		for i := m[1] - len("await"); i < m[1]; i++ {
			out[i] = ' '
		}
	}
	return out, at
}

// parse runs goja's parser on src with source maps off: a script's
// sourceMappingURL comment must never make the host open a file.
func parse(src string) (*ast.Program, error) {
	return parser.ParseFile(nil, "", src, 0, parser.WithDisableSourceMaps)
}

// arrowBody returns the statements of the arrow function that
// Prefix+…+plainSuffix parsed into.
func arrowBody(prog *ast.Program) *ast.BlockStatement {
	if len(prog.Body) != 1 {
		return nil
	}
	es, ok := prog.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return nil
	}
	call, ok := es.Expression.(*ast.CallExpression)
	if !ok {
		return nil
	}
	fn, ok := call.Callee.(*ast.ArrowFunctionLiteral)
	if !ok || !fn.Async {
		return nil
	}
	body, _ := fn.Body.(*ast.BlockStatement)
	return body
}

// syntaxFallback decides for a script that does not parse as an async
// function body. A script that parses as a classic script is one (it uses
// await as a name) and is left as it is. A script that parses as neither
// is a syntax error: when the async reading got further than the classic
// one, the script does use top-level await and its real error is further
// on, so it is wrapped and the engine reports that error, on the user's
// line; otherwise it is left as it is and the engine reports the first
// error.
func syntaxFallback(script []byte, asyncErr error) ([]byte, bool) {
	_, scriptErr := parse(string(script))
	if scriptErr == nil {
		return script, false
	}
	al, ac, ok1 := firstError(asyncErr)
	sl, sc, ok2 := firstError(scriptErr)
	if !ok1 || !ok2 {
		return script, false
	}
	if al == 1 {
		ac -= len(Prefix)
	}
	if al > sl || (al == sl && ac > sc) {
		return wrap(script, nil), true
	}
	return script, false
}

// firstError returns the line and column of the first error goja's parser
// reported.
func firstError(err error) (line, column int, ok bool) {
	list, isList := err.(parser.ErrorList)
	if !isList || len(list) == 0 {
		return 0, 0, false
	}
	return list[0].Position.Line, list[0].Position.Column, true
}

// Nesting returns the deepest bracket nesting of src, counting every '(',
// '[' and '{' as an opening and every ')', ']' and '}' as a closing, in
// strings, comments and regular expressions too, and never going below
// zero. It stops counting once the depth passes limit. It is the one
// measure of a script's nesting: the goja backend bounds every source it
// parses with it, and the front end uses it too, so what the backend
// parses the front end parses too.
//
// It does not lex JavaScript, so a script can hide real nesting behind
// closing brackets inside strings; but every hidden level costs at least
// two bytes of source (the opening and its decoy), so with the script size
// bounded the real nesting stays bounded too.
func Nesting(src []byte, limit int) int {
	depth, deepest := 0, 0
	for _, c := range src {
		switch c {
		case '(', '[', '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}
