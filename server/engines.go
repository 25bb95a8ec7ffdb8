package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/registry"
)

// The server's engines are a pool.Pool (s.pool): each engine's effect is
// built on the first run that needs it and kept until Close. Every run
// hands its script to the effect as Call.Source (the server reads
// by-address scripts from the tenant's own store first), so the effects
// share one empty store and never read a script by address themselves.

// Warm builds and warms the named engines (every engine of the registry
// when none is named) before their first run (pool.Pool.Warm), so that
// the first request does not pay for a compile. An engine that failed is
// built again by its first run.
func (s *Server) Warm(ctx context.Context, engines ...string) error {
	if err := s.pool.Warm(ctx, engines...); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

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
	Status    string              `json:"status" enum:"unchecked,pending,passed,failed,error" doc:"The kit's verdict on the engine."`
	CheckedAt *time.Time          `json:"checkedAt,omitempty" doc:"When the kit finished."`
	Proofs    []conformance.Proof `json:"proofs,omitempty" doc:"For each declared capability, whether the kit proved it and with which measurements."`
	Failed    []string            `json:"failedCases,omitempty" doc:"The cases that failed."`
	Error     string              `json:"error,omitempty" doc:"Why the kit could not run."`
}

// verifier runs the conformance kit on each engine at most once per
// process, one engine at a time, in the background, when asked first; the
// engines listing reports what it has so far. So the kit never runs per
// request, a flood of listings costs nothing, and the figures are the
// kit's own on this machine.
type verifier struct {
	check func(ctx context.Context, e registry.Entry) (*conformance.Report, error)
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
				r.Status, r.Error = VerifyError, boundDetail(err.Error())
			default:
				r.Status, r.Proofs = VerifyPassed, rep.Proofs
				for _, c := range rep.Cases {
					if c.Status == conformance.StatusFail {
						r.Status = VerifyFailed
						r.Failed = append(r.Failed, c.Name)
					}
				}
			}
			v.mu.Lock()
			v.results[e.Engine] = r
			v.mu.Unlock()
		}
	}
}

// boundDetail bounds a text for a response.
func boundDetail(s string) string {
	const max = 512
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "…[truncated]"
	}
	return s
}
