package server

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/storage"
	"github.com/sandbank/sandbank/tenant"
)

// Durable runs over HTTP (docs/design.md, "Durable runs"): a run request
// names host functions that suspend (RunRequest.Suspend); a script that
// calls one ends suspended, its continuation kept in the tenant's store
// (storage.Data.Continuations) under the run's id, and its answer says
// what it waits for (RunAnswer.Waiting). POST /v1/runs/{run}/resume gives
// the answer and continues it (durable.Resume): the door translates, the
// package durable and the effect decide.

// RunAnswer is the response of POST /v1/runs and of POST
// /v1/runs/{run}/resume: the run's record (effect.Record, its fields
// inline) and, for a run that suspended, what it waits for.
type RunAnswer struct {
	*effect.Record
	Waiting *Waiting `json:"waiting,omitempty" doc:"Set when the run suspended (failure.code suspended): the host call it waits at. POST /v1/runs/{run}/resume with its answer continues the run."`
}

// Waiting is the host call a suspended run waits at.
type Waiting struct {
	Run  string          `json:"run" doc:"The suspended run's id (its Sandbank-Run header): POST /v1/runs/{run}/resume continues it, once."`
	Name string          `json:"name" doc:"The host function the script called: one of the request's suspend names."`
	Args json.RawMessage `json:"args" doc:"The arguments the script passed, JSON."`
}

// ResumeRequest is the body of POST /v1/runs/{run}/resume.
type ResumeRequest struct {
	Answer json.RawMessage `json:"answer" required:"true" doc:"The answer of the host call the run waits at, any JSON value: the script's await of it returns this value."`
}

type resumeInput struct {
	Run  string `path:"run" pattern:"^[0-9a-f]{32}$" doc:"The suspended run's id (the Sandbank-Run header of its answer)."`
	Body ResumeRequest
}

// registerDurable declares POST /v1/runs/{run}/resume.
func (s *Server) registerDurable(api huma.API, errs func(codes ...int) map[string]*huma.Response, secured []map[string][]string) {
	huma.Register(api, huma.Operation{
		OperationID: "resumeRun", Method: http.MethodPost, Path: "/v1/runs/{run}/resume",
		Summary:      "Resume a suspended run",
		Description:  "Continues a run that suspended at a host call named in its request's suspend: the script runs again from the start on the engine that ran it, its earlier host calls answered from the run's log (a script that calls otherwise ends with the typed failure replayDiverged), the pending call answered with answer, then live. Answers as POST /v1/runs does, under a new run id whose receipt names the suspended one's (previous); the run may suspend again. A run is resumed once: 404 once it has been (or for another tenant's run, or an unknown one), 409 while another resumption of it is in flight. A continuation that does not check (edited, not signed by this server's keys) is refused, 400.",
		Responses:    errs(400, 401, 403, 404, 409, 413, 415, 422, 429, 503),
		Security:     secured,
		MaxBodyBytes: s.opts.MaxBodyBytes,
	}, s.resume)
}

// durableRun is a run on the durable path (package durable): the host
// functions that suspend it, the continuation it resumes with its answer,
// and, once it ran, the continuation of its suspension. A nil
// *durableRun is an ordinary run.
type durableRun struct {
	suspend []string
	resume  *durable.Continuation // nil: a first segment (durable.Run)
	answer  json.RawMessage
	keys    *receipt.KeySet
	claimed func(consumed bool) error // the resumed run's claim, in its tenant's store
	cont    *durable.Continuation     // the suspension's; set by run
}

// durableOf returns the durable run a request asks for: nil when it
// names no host function that suspends.
func durableOf(req *RunRequest) *durableRun {
	if len(req.Suspend) == 0 {
		return nil
	}
	return &durableRun{suspend: req.Suspend}
}

// host returns the run's host functions: each named one suspends.
func (d *durableRun) host() effect.HostFuncs {
	if d == nil {
		return nil
	}
	return durable.Suspending(d.suspend, "waits for POST /v1/runs/{run}/resume")
}

// run runs call on eff: as an ordinary run, or durably (durable.Run,
// durable.Resume), keeping the continuation of a suspension.
func (d *durableRun) run(ctx context.Context, eff *effect.Effect, call effect.Call) (*effect.Record, error) {
	if d == nil {
		return eff.Run(ctx, call)
	}
	rec, cont, err := durable.Segment{From: d.resume, Answer: d.answer, Options: &durable.Options{Keys: d.keys}}.Run(ctx, eff, call)
	d.cont = cont
	return rec, err
}

// park keeps a suspended run's continuation under its run id in the
// tenant's store, before the answer is sent, and returns what it waits
// for; nil for a run that did not suspend.
func (s *Server) park(ctx context.Context, run string, d *durableRun) (*Waiting, *Problem) {
	if d == nil || d.cont == nil {
		return nil, nil
	}
	name, args, ok := d.cont.Pending()
	b, err := d.cont.Encode()
	if !ok || err != nil {
		return nil, unavailable(KindInfrastructure, "server: the suspended run's continuation could not be made", time.Second)
	}
	store, err := s.data.Continuations(tenantOf(ctx).Name)
	if err == nil {
		err = store.Put(run, storage.Suspended{Continuation: b, Suspend: d.suspend})
	}
	switch {
	case errors.Is(err, storage.ErrContinuationsFull):
		return nil, runAnswerOf(effect.KindQuota).problem(err)
	case err != nil:
		s.log.Warn("sandbank: continuations: a suspended run could not be kept; the run is answered 503", slog.String("error", effect.Excerpt(err.Error())))
		return nil, unavailable(KindInfrastructure, "server: keeping the suspended run failed", time.Second)
	}
	return &Waiting{Run: run, Name: name, Args: args}, nil
}

// release ends a resumption's claim: consumed when the resumed run was
// answered with its record, else given back to be resumed again.
func (s *Server) release(d *durableRun, answered bool) {
	if d == nil || d.claimed == nil {
		return
	}
	if err := d.claimed(answered); err != nil {
		s.log.Warn("sandbank: continuations: a resumed run could not be removed; it may be resumed again", slog.String("error", effect.Excerpt(err.Error())))
	}
}

// resume answers POST /v1/runs/{run}/resume: it resolves the suspended
// run (claiming it), admits it, runs it, and answers as a run.
func (s *Server) resume(ctx context.Context, in *resumeInput) (*runOutput, error) {
	if s.draining.Load() {
		s.metrics.rejected.WithLabelValues(rejectShutdown).Inc()
		return nil, unavailable(KindInfrastructure, "server: shutting down", time.Second)
	}
	t := tenantOf(ctx)
	acc := accessOf(ctx)
	entry, call, d, p := s.resolveResume(t, acc, in)
	if p != nil {
		return nil, p
	}
	release, p := s.admit(ctx, t, acc)
	if p != nil {
		s.release(d, false)
		return nil, p
	}
	defer release()
	rec, err := s.execute(ctx, entry, t, call, d, acc)
	out, err := s.answer(ctx, entry, rec, err, d, acc)
	s.release(d, out != nil)
	return out, err
}

// resolveResume reads a resume request: the tenant's suspended run
// (claimed: no other resumption runs it until released), its
// continuation, its engine (within the tenant's engines) and its limits
// (within the tenant's ceiling).
func (s *Server) resolveResume(t *tenant.Tenant, acc *access, in *resumeInput) (registry.Entry, effect.Call, *durableRun, *Problem) {
	var entry registry.Entry
	store, err := s.data.Continuations(t.Name)
	if err != nil {
		return entry, effect.Call{}, nil, unavailable(KindInfrastructure, "server: the tenant's data could not be opened", time.Second)
	}
	kept, claimed, err := store.Claim(in.Run)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return entry, effect.Call{}, nil, invalidCall(http.StatusNotFound, "server: no suspended run "+in.Run+" in the tenant's runs (unknown, or resumed already)")
	case errors.Is(err, storage.ErrResuming):
		return entry, effect.Call{}, nil, invalidCall(http.StatusConflict, "server: run "+in.Run+" is being resumed by another request")
	case err != nil:
		return entry, effect.Call{}, nil, unavailable(KindInfrastructure, "server: reading the suspended run failed", time.Second)
	}
	d := &durableRun{suspend: kept.Suspend, answer: in.Body.Answer, claimed: claimed}
	fail := func(p *Problem) (registry.Entry, effect.Call, *durableRun, *Problem) {
		s.release(d, false)
		return entry, effect.Call{}, nil, p
	}
	if d.resume, err = durable.Decode(kept.Continuation); err != nil {
		return fail(refused(err))
	}
	if d.keys, err = receipt.NewKeySet(s.signing.published.Keys...); err != nil {
		return fail(unavailable(KindInfrastructure, "server: the server's keys could not be read", time.Second))
	}
	r := d.resume.Receipt
	if entry, err = s.pool.Resolve(r.Engine, "", t.Engines...); err != nil {
		return fail(refused(err))
	}
	acc.engine = entry.Engine
	if _, p := s.limits(t.Limits, &RunLimits{WallClockMs: r.Limits.WallClock.Milliseconds(), MemoryBytes: r.Limits.MemoryBytes}); p != nil {
		return fail(p)
	}
	return entry, effect.Call{Host: d.host()}, d, nil
}
