package typescript

import (
	"fmt"

	"github.com/sandbank/sandbank/internal/jsdepth"
	"github.com/sandbank/sandbank/spi"
)

// The guards in this file run before esbuild, which parses in the host
// process: a Go stack overflow in its parser ends the whole process, and
// its enum folding can allocate without bound. Each guard only scans the
// source, without recursion, and refuses what could cost too much.

// MaxSteps bounds the tokens of a script that can each open a level of
// its syntax tree (jsdepth.Steps): the deepest esbuild can recurse on it.
// esbuild's parser and printer take up to about 10 KB of Go stack a level
// and overflowed the 1 GB stack between 100,000 and 200,000 levels; 16,384
// levels take at most about 160 MB, and a typical script counts a step per
// six to ten bytes (about 100 KiB of code).
const MaxSteps = 16384

// MaxScopes bounds the nesting of brackets and functions of a script
// (jsdepth.Scopes): esbuild's renaming of symbols costs more than the
// square of the depth of nested scopes (1,000 nested arrow functions, 3 KB
// of source, took 8 s; 2,000 took 44 s).
const MaxScopes = 256

// maxEnumString bounds a string literal in an enum body: esbuild inlines
// an enum member's value at every use, so the JavaScript grows by the
// value's length at each of at most MaxSteps uses.
const maxEnumString = 256

// guard returns the outcome that refuses script before esbuild runs, or
// nil.
func guard(script []byte) *spi.Outcome {
	if jsdepth.Steps(script, MaxSteps) > MaxSteps {
		out := spi.Threw("SyntaxError", fmt.Sprintf("typescript: the script is nested too deeply or is too long to transform: it has more than %d brackets, operators and keywords", MaxSteps))
		return &out
	}
	if jsdepth.Scopes(script, MaxScopes) > MaxScopes {
		out := spi.Threw("SyntaxError", fmt.Sprintf("typescript: the script nests brackets and functions deeper than %d levels", MaxScopes))
		return &out
	}
	if msg := enumGuard(script); msg != "" {
		out := spi.Threw("SyntaxError", msg)
		return &out
	}
	return nil
}

// enumGuard refuses the enums whose folding esbuild does not bound: string
// concatenation (a member that is the sum of two earlier ones doubles, so
// 30 members reach a gigabyte) and long strings (inlined at each use). It
// reads every body that follows the word enum, anywhere in the script
// (strings and comments too, which only refuses more): when any body holds
// a string or a template, no body may use +, and no string in a body may
// be longer than maxEnumString bytes. A body's strings and comments are
// lexed, so a quote or brace inside them neither hides nor ends anything;
// a '/' that starts no comment (a division or a regular expression) is
// refused, since a body cannot be lexed past it.
func enumGuard(src []byte) string {
	quotes, plus := false, false
	for i := 0; i < len(src); i++ {
		if !isWordAt(src, i, "enum") {
			continue
		}
		end, q, p, msg := enumBody(src, i+len("enum"))
		if msg != "" {
			return msg
		}
		quotes, plus = quotes || q, plus || p
		i = end
	}
	if quotes && plus {
		return "typescript: an enum member computed with + is not supported in a script whose enums hold strings (esbuild's folding of string concatenation is unbounded)"
	}
	return ""
}

// isWordAt reports whether the word w starts at src[i] and is a whole
// word.
func isWordAt(src []byte, i int, w string) bool {
	if i+len(w) > len(src) || string(src[i:i+len(w)]) != w {
		return false
	}
	if i > 0 && wordByte(src[i-1]) {
		return false
	}
	return i+len(w) == len(src) || !wordByte(src[i+len(w)])
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// enumBody lexes the body that starts at the first '{' at or after i and
// returns the index of its closing brace (or len(src)), whether it holds a
// string or template, whether it uses +, and a refusal message.
func enumBody(src []byte, i int) (end int, quotes, plus bool, msg string) {
	for i < len(src) && src[i] != '{' {
		i++
	}
	depth := 0
	for ; i < len(src); i++ {
		switch c := src[i]; c {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i, quotes, plus, ""
			}
		case '+':
			plus = true
		case '`':
			quotes, plus = true, true // a template concatenates
		case '"', '\'':
			quotes = true
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j-i-1 > maxEnumString {
				return i, quotes, plus, fmt.Sprintf("typescript: a string in an enum is longer than %d bytes (esbuild copies an enum member's value to every use)", maxEnumString)
			}
			i = j
		case '/':
			switch {
			case i+1 < len(src) && src[i+1] == '/':
				for i < len(src) && src[i] != '\n' {
					i++
				}
			case i+1 < len(src) && src[i+1] == '*':
				i += 2
				for i+1 < len(src) && !(src[i] == '*' && src[i+1] == '/') {
					i++
				}
				i++
			default:
				return i, quotes, plus, "typescript: a division or regular expression in an enum is not supported"
			}
		}
	}
	return len(src), quotes, plus, ""
}
