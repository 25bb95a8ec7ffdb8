package server

import (
	"context"
	"sync"
	"time"

	"github.com/sandbank/sandbank/conformance/verdict"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
)

// The statuses of an engine's verification.
const (
	VerifyUnchecked = "unchecked" // the server has no verifier
	VerifyPending   = "pending"   // the kit is running or queued
	VerifyPassed    = "passed"    // every case passed or was skipped for a declared reason
	VerifyFailed    = "failed"    // a case failed
	VerifyError     = "error"     // the kit could not run
)

// Verification is what the conformance kit found about one engine.
type Verification struct {
	Status    string          `json:"status" enum:"unchecked,pending,passed,failed,error" doc:"The kit's verdict on the engine."`
	CheckedAt *time.Time      `json:"checkedAt,omitempty" doc:"When the kit finished."`
	Proofs    []verdict.Proof `json:"proofs,omitempty" doc:"For each declared capability, whether the kit proved it and with which measurements."`
	Failed    []string        `json:"failedCases,omitempty" doc:"The cases that failed."`
	Error     string          `json:"error,omitempty" doc:"Why the kit could not run."`
}

// verifier runs the conformance kit on each engine at most once per
// process, one engine at a time, in the background, when asked first; the
// engines listing reports what it has so far. So the kit never runs per
// request, a flood of listings costs nothing, and the figures are the
// kit's own on this machine.
type verifier struct {
	check func(ctx context.Context, e registry.Entry) (*verdict.Report, error)
	ctx   context.Context // cancelled by Close

	mu      sync.Mutex
	results map[string]*Verification
	queue   chan registry.Entry
	started bool
}

// get returns the engine's verification, asking for it when it has none.
func (v *verifier) get(e registry.Entry) Verification {
	if v.check == nil {
		return Verification{Status: VerifyUnchecked}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if r := v.results[e.Engine]; r != nil {
		return *r
	}
	if !v.started {
		v.started = true
		go v.work()
	}
	select {
	case v.queue <- e:
		v.results[e.Engine] = &Verification{Status: VerifyPending}
	default: // queue full: ask again on a later listing
	}
	return Verification{Status: VerifyPending}
}

func (v *verifier) work() {
	for {
		select {
		case <-v.ctx.Done():
			return
		case e := <-v.queue:
			rep, err := v.check(v.ctx, e)
			now := time.Now().UTC()
			r := &Verification{CheckedAt: &now}
			switch {
			case err != nil:
				r.Status, r.Error = VerifyError, effect.Excerpt(err.Error())
			default:
				r.Status, r.Proofs, r.Failed = VerifyPassed, rep.Proofs, rep.FailedCases()
				if len(r.Failed) > 0 {
					r.Status = VerifyFailed
				}
			}
			v.mu.Lock()
			v.results[e.Engine] = r
			v.mu.Unlock()
		}
	}
}
