package conformance

import (
	"context"
	"time"
)

// waitIdle measures the process's CPU time in consecutive idleWindow
// windows, after a case's run ended in a limit or a cancellation, until
// the process is idle or the idle wait passed. Idle is idleSpan
// consecutive windows that together used at most idleShare of one core. It records the
// figure "cpuAfterStop" (the share of the last measure, in percent of one
// core) and fails the case with what it measured when the process never
// fell to idle: the engine kept running after it reported the limit.
//
// The figure is the whole process's CPU (getrusage), not the machine's:
// another process on the other core does not count. A script still running
// gets a share of a core over any idleSpan windows even on a loaded 2-core
// machine (about half of one at load 4, a fifth at load 10), though it may
// be descheduled for a whole single window (seen at load 10, which is why
// one window is not enough); an idle process uses next to nothing.
// Other goroutines of the same process do count (a test running in
// parallel), so the kit runs its cases sequentially. On a platform without
// getrusage the check is skipped and the figure says so.
func (e *env) waitIdle(ctx context.Context, what string) {
	if _, ok := processCPU(); !ok {
		e.figure("cpuAfterStopUnmeasured", 0, "", "", 0)
		return
	}
	deadline := time.Now().Add(e.k.idleWait)
	var (
		windows int
		recent  []float64 // the shares of the last idleSpan windows
		share   float64
	)
	for {
		c0, _ := processCPU()
		w0 := time.Now()
		select {
		case <-time.After(idleWindow):
		case <-ctx.Done():
			return
		}
		c1, _ := processCPU()
		windows++
		w := float64(c1-c0) / float64(time.Since(w0))
		recent = append(recent, w)
		if len(recent) > idleSpan {
			recent = recent[1:]
		}
		share = w
		if len(recent) == idleSpan {
			sum := 0.0
			for _, r := range recent {
				sum += r
			}
			if share = sum / idleSpan; share <= idleShare {
				e.figure("cpuAfterStop", round1(share*100), "% of a core", "<=", idleShare*100)
				return
			}
		}
		if time.Now().After(deadline) {
			break
		}
	}
	e.figure("cpuAfterStop", round1(share*100), "% of a core", "<=", idleShare*100)
	e.failf("after %s the process still used %.0f%% of a core over %d windows of %v in %v (idle is at most %.0f%%): the engine kept running after Evaluate returned",
		what, share*100, windows, idleWindow, e.k.idleWait, idleShare*100)
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

func ms(d time.Duration) float64 { return round1(float64(d) / float64(time.Millisecond)) }

// stopBound fails the case when the backend's own Evaluate returned later
// than grace after deadline (measured from start), recording the figure.
func (e *env) stopBound(figure string, took, deadline time.Duration, what string) bool {
	bound := deadline + e.k.grace
	e.figure(figure, ms(took), "ms", "<=", ms(bound))
	if took > bound {
		e.failf("%s: the backend's own Evaluate returned after %v, past %v plus the stop grace %v", what, took.Round(time.Millisecond), deadline, e.k.grace)
		return false
	}
	return true
}
