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
	e.idleBy(ctx, what, time.Time{}, time.Now().Add(e.k.idleWait))
}

// waitIdleFrom is waitIdle for a hard wall clock (or a cancellation a
// hard clock honours), measured from deadline, when the script had to
// stop: the process must be idle by deadline + the stop grace +
// hardIdleSettle + the idle span, and the figure "idleAfterDeadline"
// records when it was. The long idle wait of waitIdle would let a native
// operation that runs on for seconds after Evaluate returned finish
// unseen (and give a zombie loop more chances to look idle for one
// span); this bound does not, and it counts CPU time, so load slows an
// honest engine's clean-up without making it look busier.
func (e *env) waitIdleFrom(ctx context.Context, what string, deadline time.Time) {
	e.idleBy(ctx, what, deadline, deadline.Add(e.hardIdleBound()))
}

// hardIdleBound is how long after a hard deadline the process must be
// idle, the idle span included.
func (e *env) hardIdleBound() time.Duration {
	return e.k.grace + hardIdleSettle + idleSpan*idleWindow
}

// idleBy measures windows until the process is idle or until by; from,
// when set, is the deadline the idle bound counts from.
func (e *env) idleBy(ctx context.Context, what string, from, by time.Time) {
	if _, ok := processCPU(); !ok {
		e.figure("cpuAfterStopUnmeasured", 0, "", "", 0)
		return
	}
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
				if !from.IsZero() {
					e.figure("idleAfterDeadline", ms(time.Since(from)), "ms", "<=", ms(e.hardIdleBound()))
				}
				return
			}
		}
		if time.Now().After(by) {
			break
		}
	}
	e.figure("cpuAfterStop", round1(share*100), "% of a core", "<=", idleShare*100)
	if !from.IsZero() {
		e.figure("idleAfterDeadline", ms(time.Since(from)), "ms", "<=", ms(e.hardIdleBound()))
		e.failf("after %s the process still used %.0f%% of a core over %d windows of %v, %v after the deadline (idle is at most %.0f%% by the deadline + the stop grace + %v + the idle span, %v): the engine kept running after its deadline",
			what, share*100, windows, idleWindow, time.Since(from).Round(time.Millisecond), idleShare*100, hardIdleSettle, e.hardIdleBound())
		return
	}
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
