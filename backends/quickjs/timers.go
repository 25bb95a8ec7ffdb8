package quickjs

import "time"

// A run's two clocks: the cold-start allowance, which bounds the start-up
// phases, and the script's wall clock, which starts when the script does.

func (r *run) setPhase(p string) { r.phase.Store(p) }
func (r *run) getPhase() string  { s, _ := r.phase.Load().(string); return s }

// scriptStarts is called by the stdout sink, synchronously inside the
// guest's write of the start record: the start-up phases are over and the
// script's wall clock starts now.
func (r *run) scriptStarts() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if !r.coldTimer.Stop() {
		return // the allowance already ran out; the run is being stopped
	}
	r.setPhase(phaseScript)
	r.startedAt = time.Now()
	r.wallTimer = time.AfterFunc(r.limits.WallClock, r.expireWallClock)
}

// expireWallClock ends the script's wall clock: the run's stdout is sealed
// first, so a record the guest writes from now on is never read (a value
// after the deadline is never delivered, even when the guest finishes
// writing it before it is stopped), then the run is stopped.
func (r *run) expireWallClock() {
	r.stdout.Seal()
	r.wallExpired.Store(true)
	r.cancel(errWallClock)
}

// armColdStart starts the cold-start allowance, once the compiled module
// is there: waiting for the compile (once per process, on a goroutine of
// its own, seconds on a loaded machine) is bounded by the caller's context
// only, so no run fails because a compile was slow.
func (r *run) armColdStart(inputBytes int) {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	allowance := coldStartAllowance(r.b.set, inputBytes)
	r.coldTimer = time.AfterFunc(allowance, func() {
		r.cancel(&StartupError{Phase: r.getPhase(), Allowance: allowance})
	})
}

func (r *run) stopTimers() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if r.coldTimer != nil {
		r.coldTimer.Stop()
	}
	if r.wallTimer != nil {
		r.wallTimer.Stop()
	}
}

// coldStartAllowance is the cold-start allowance of a run whose input is
// inputBytes long.
func coldStartAllowance(set settings, inputBytes int) time.Duration {
	return set.coldStart + time.Duration(float64(set.coldPerMiB)*float64(inputBytes)/(1<<20))
}
