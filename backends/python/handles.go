//go:build linux

package python

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// noOutcome is err as a spawn's failure: the sandbox could not be
// started.
func noOutcome(err error) error { return fmt.Errorf("%w: %v", errNoOutcome, err) }

// handles holds the descriptors a spawn opens until each is handed over
// (keep) or closed (drop): every way out of the spawn, an error's
// included, closes what is left with one deferred close.
type handles struct{ held []io.Closer }

// pipe opens a pipe whose ends h holds.
func (h *handles) pipe() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err == nil {
		h.held = append(h.held, r, w)
	}
	return r, w, err
}

// hold makes h close c unless it is kept.
func (h *handles) hold(c io.Closer) { h.held = append(h.held, c) }

// keep hands cs over: h no longer closes them.
func (h *handles) keep(cs ...io.Closer) {
	h.held = slices.DeleteFunc(h.held, func(c io.Closer) bool { return slices.Contains(cs, c) })
}

// drop closes cs now.
func (h *handles) drop(cs ...io.Closer) {
	h.keep(cs...)
	for _, c := range cs {
		_ = c.Close()
	}
}

// close closes every descriptor h still holds.
func (h *handles) close() { h.drop(slices.Clone(h.held)...) }
