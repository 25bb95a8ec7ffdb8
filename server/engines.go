package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
)

// engines holds one Effect per engine, built on the first run that needs
// it and kept until Close: engines are safe for concurrent use, and
// building one (a wasm compile) is far dearer than a run. Every run hands
// its script to the effect as Call.Source (the server reads by-address
// scripts from the tenant's own store first), so the effects share one
// empty store and never read a script by address themselves.
type engines struct {
	reg  *registry.Registry
	opts effect.Options // per engine: Engine is set

	mu      sync.Mutex
	effects map[string]*engineSlot
	closed  bool
}

type engineSlot struct {
	once sync.Once
	eff  *effect.Effect
	err  error
}

var errEnginesClosed = errors.New("server: shutting down")

// effect returns the engine's Effect, building it once. A build that fails
// is retried by the next run.
func (es *engines) effect(e registry.Entry) (*effect.Effect, error) {
	es.mu.Lock()
	if es.closed {
		es.mu.Unlock()
		return nil, errEnginesClosed
	}
	slot := es.effects[e.Engine]
	if slot == nil {
		slot = &engineSlot{}
		es.effects[e.Engine] = slot
	}
	es.mu.Unlock()
	slot.once.Do(func() {
		backend, err := e.Factory()
		if err != nil {
			slot.err = fmt.Errorf("server: engine %s: %w", e.Engine, err)
			return
		}
		opts := es.opts
		opts.Engine = e.Engine
		slot.eff, slot.err = effect.New(effect.NewMemoryStore(), backend, &opts)
		if c, ok := backend.(io.Closer); ok && slot.err != nil {
			_ = c.Close()
		}
	})
	if slot.err != nil {
		es.mu.Lock()
		if es.effects[e.Engine] == slot {
			delete(es.effects, e.Engine)
		}
		es.mu.Unlock()
	}
	return slot.eff, slot.err
}

// close closes every built Effect; later runs get errEnginesClosed.
func (es *engines) close() error {
	es.mu.Lock()
	es.closed = true
	slots := es.effects
	es.effects = nil
	es.mu.Unlock()
	var errs []error
	for _, s := range slots {
		s.once.Do(func() { s.err = errEnginesClosed })
		if s.eff != nil {
			errs = append(errs, s.eff.Close())
		}
	}
	return errors.Join(errs...)
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
