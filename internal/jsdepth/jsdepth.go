// Package jsdepth bounds how deep a JavaScript or TypeScript parser (or
// Starlark's resolver, which recurses on the same punctuation) can recurse
// on a source, before the parser runs.
//
// The parsers Sandbank runs in the host process on untrusted text (esbuild's,
// for TypeScript) recurse on the Go stack once per level of the syntax tree,
// and a Go stack overflow is a fatal error that no recover catches: it ends
// the whole process. Brackets are not the only nesting. Chains of prefix
// operators (!!!x, typeof typeof x, new new X), right-associative chains
// (a=>a=>…, a=b=…, a?b:c?…, a**b**…), suffix chains (a.b.c…, a()()…,
// tagged templates), labels (a:b:…) and type-level nesting (A<A<…>>,
// keyof keyof …, conditional types) each add a level per token, with no
// bracket at all.
//
// [Steps] does not lex the source. It counts every token that can open a
// level of the tree: every opening bracket, every operator or punctuation
// byte but the comma-free separators (';' and closing brackets), and the
// keywords that prefix or chain an expression or a type; in strings,
// comments and regular expressions too. Every level of the tree a parser
// builds consumes at least one such token, so the count is an upper bound
// on the depth, whatever the source hides in strings or comments: there is
// nothing to decoy. The price is that it bounds the whole script's count,
// not its depth, so it refuses long scripts too (a typical script counts
// one step per six to ten bytes).
package jsdepth

// Steps returns the number of tokens of src that can each open a level of
// the syntax tree (see the package documentation). It stops counting once
// the count passes limit.
func Steps(src []byte, limit int) int {
	n := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' || c == ')' || c == ']' || c == '}':
			continue
		case isWordByte(c):
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			if keywords[string(src[i:j])] {
				n++
			}
			i = j - 1
		case c < 0x80:
			// Brackets, operators, quotes, commas and every other ASCII
			// punctuation byte.
			n++
		default:
			// Bytes of non-ASCII characters: words or string contents.
			continue
		}
		if n > limit {
			return n
		}
	}
	return n
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

// keywords are the words that prefix an expression, a statement or a
// type, or chain one (each can add a level with no punctuation around
// it).
var keywords = map[string]bool{
	"abstract": true, "accessor": true, "as": true, "asserts": true, "async": true,
	"await": true, "case": true, "class": true, "declare": true, "default": true,
	"delete": true, "do": true, "else": true, "enum": true, "export": true,
	"extends": true, "function": true, "get": true, "implements": true, "import": true,
	"in": true, "infer": true, "instanceof": true, "is": true, "keyof": true,
	"let": true, "module": true, "namespace": true, "new": true, "of": true,
	"out": true, "override": true, "private": true, "protected": true, "public": true,
	"readonly": true, "return": true, "satisfies": true, "set": true, "static": true,
	"throw": true, "type": true, "typeof": true, "unique": true, "using": true,
	"void": true, "yield": true,
}

// Scopes returns the deepest nesting of brackets and functions in src: at
// each byte, the number of brackets open (every '(', '[' and '{', as
// jsfront.Nesting counts them, in strings and comments too) plus the
// arrows ("=>") and the words function and class met since the innermost
// of them opened. A parser's scopes nest no deeper (a function's body is a
// bracket, or follows its arrow). It stops counting once the depth passes
// limit.
func Scopes(src []byte, limit int) int {
	var open []int                // the arrows and functions counted at each open bracket
	base, deepest, fns := 0, 0, 0 // base: the depth at the innermost bracket
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '(' || c == '[' || c == '{':
			open = append(open, fns)
			base += fns + 1
			fns = 0
		case c == ')' || c == ']' || c == '}':
			if len(open) > 0 {
				fns = open[len(open)-1]
				open = open[:len(open)-1]
				base -= fns + 1
			}
		case c == '=' && i+1 < len(src) && src[i+1] == '>':
			fns++
			i++
		case isWordByte(c):
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			if w := string(src[i:j]); w == "function" || w == "class" {
				fns++
			}
			i = j - 1
		}
		if base+fns > deepest {
			deepest = base + fns
			if deepest > limit {
				return deepest
			}
		}
	}
	return deepest
}
