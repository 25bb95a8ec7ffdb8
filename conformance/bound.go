package conformance

import (
	"fmt"
	"io"
	"time"
)

// bounded runs fn on a goroutine of its own and waits for it at most d. It
// returns how long fn ran, its error (a panic becomes one, naming what),
// and whether it returned within d. An fn still running after d is left
// behind: the kit cannot stop a goroutine, and a hung backend must not
// hang the kit. Warm and Close are both bounded by it.
func bounded(d time.Duration, what string, fn func() error) (took time.Duration, err error, returned bool) {
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%s panicked: %v", what, r)
			}
		}()
		done <- fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return time.Since(start), err, true
	case <-t.C:
		return time.Since(start), nil, false
	}
}

// closeWithin closes c within d and returns "" when Close returned (or
// panicked) in time, or the reason that fails the backend when it did not
// (Close is then left running).
func closeWithin(c io.Closer, d time.Duration) string {
	if _, _, returned := bounded(d, "Close", c.Close); !returned {
		return fmt.Sprintf("Close did not return within %v (Options.CloseTimeout)", d)
	}
	return ""
}
