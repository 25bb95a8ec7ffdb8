package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// progress reports the matrix's progress on stderr: on a terminal, one
// line rewritten in place; otherwise one plain line per case, for logs.
type progress struct {
	w   io.Writer
	tty bool
	// shown is whether an in-place line is on the terminal now.
	shown bool
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *progress) step(engine, name string, i, n int) {
	if !p.tty {
		fmt.Fprintf(p.w, "[%s %d/%d] %s\n", engine, i, n, name)
		return
	}
	// \r and "erase to end of line": the previous step disappears.
	fmt.Fprintf(p.w, "\r\x1b[K[%s %d/%d] %s", engine, i, n, truncate(name, tableWidth-len(engine)-16))
	p.shown = true
}

// note prints a line that stays (a refusal).
func (p *progress) note(format string, args ...any) {
	p.clear()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// clear removes the in-place line, so that what follows starts clean.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
