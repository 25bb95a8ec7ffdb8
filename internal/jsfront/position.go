package jsfront

import "unicode/utf8"

// SyntaxErrorAt returns where goja's parser finds the first syntax error
// of script, read as an engine runs it (Prepare's output, so a script
// with top-level await is read as the body of an async function): the
// line and the column (1-based, as goja's parser counts them) in the
// script as its author wrote it, Prefix taken off line 1. It returns
// false when the script parses, or lies past the front end's bounds
// (MaxBytes, MaxNesting, valid UTF-8), which it never parses.
//
// An engine whose own column is unreliable (QuickJS reports the column
// of the last identifier or white space it read before the error, and
// counts line 1 from zero) uses it for the column of its own error, on
// the line the engine reported.
func SyntaxErrorAt(script []byte) (line, column int, ok bool) {
	if len(script) > MaxBytes || !utf8.Valid(script) || Nesting(script, MaxNesting) > MaxNesting {
		return 0, 0, false
	}
	src, wrapped := Prepare(script)
	masked, _ := mask(src)
	_, err := parse(string(masked))
	if err == nil {
		return 0, 0, false
	}
	line, column, ok = firstError(err)
	if !ok {
		return 0, 0, false
	}
	if wrapped && line == 1 {
		column -= len(Prefix)
		if column < 1 {
			return 0, 0, false
		}
	}
	return line, column, true
}
