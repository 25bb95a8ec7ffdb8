package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// Durable runs over MCP (docs/design.md, "Durable runs"): the host
// functions Options.Suspend names suspend a run on an engine that
// declares deterministic; the result says what it waits for
// (Result.Waiting) and the run is kept in Options.Continuations until the
// resume_run tool answers it (durable.Resume). The door translates; the
// package durable and the effect decide.

// resumeRunName is the name of the tool that resumes a suspended run.
const resumeRunName = "resume_run"

// Waiting is the host call a suspended run waits at.
type Waiting struct {
	// Run is the suspended run's id: resume_run continues it, once.
	Run string `json:"run"`
	// Name is the host function the script called (one of
	// Options.Suspend) and Args the arguments it passed, JSON.
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// durableRun is a run on the durable path: the host functions that
// suspend it, the continuation it resumes with its answer, and, once it
// ran, the continuation of its suspension. A nil *durableRun is an
// ordinary run.
type durableRun struct {
	suspend []string
	owner   string // the caller's Admission.Tenant
	resume  *durable.Continuation
	answer  json.RawMessage
	keys    *receipt.KeySet
	cont    *durable.Continuation // the suspension's; set by run
}

// durableFor returns the durable run of a call on engine by owner, and
// its host functions (fns with the suspending ones added): nil, fns when
// the server suspends nothing or the engine does not declare
// deterministic (it runs as before, without them).
func (s *Server) durableFor(engine, owner string, fns effect.HostFuncs) (*durableRun, effect.HostFuncs) {
	if len(s.suspend) == 0 {
		return nil, fns
	}
	e, err := s.pool.Resolve(engine, "")
	if err != nil || !e.Capabilities.Deterministic || !e.Capabilities.HostCalls {
		return nil, fns
	}
	d := &durableRun{suspend: s.suspend, owner: owner, keys: s.keys}
	return d, d.host(fns)
}

// host returns fns (copied) with each suspending host function added.
func (d *durableRun) host(fns effect.HostFuncs) effect.HostFuncs {
	out := effect.HostFuncs{}
	maps.Copy(out, fns)
	maps.Copy(out, durable.Suspending(d.suspend, "waits for resume_run"))
	return out
}

// run runs call on eff: as an ordinary run, or durably.
func (d *durableRun) run(ctx context.Context, eff *effect.Effect, call effect.Call) (*effect.Record, error) {
	if d == nil {
		return eff.Run(ctx, call)
	}
	rec, cont, err := durable.Segment{From: d.resume, Answer: d.answer, Options: &durable.Options{Keys: d.keys}}.Run(ctx, eff, call)
	d.cont = cont
	return rec, err
}

// park keeps a suspended run's continuation in Options.Continuations
// under its run id (the receipt's, when Options.Receipts kept it) and
// says in the result what it waits for; a result of a run that did not
// suspend is returned as it is.
func (s *Server) park(res *mcp.CallToolResult, d *durableRun) (*mcp.CallToolResult, error) {
	r, ok := res.StructuredContent.(Result)
	if d == nil || d.cont == nil || !ok {
		return res, nil
	}
	name, args, pending := d.cont.Pending()
	b, err := d.cont.Encode()
	if !pending || err != nil {
		return nil, errors.New("mcpserver: the suspended run's continuation could not be made (infrastructure, retryable)")
	}
	if r.Run == "" {
		r.Run = storage.NewRunID()
	}
	err = s.continuations.Put(r.Run, storage.Suspended{Continuation: b, Suspend: d.suspend, Owner: d.owner})
	switch {
	case errors.Is(err, storage.ErrContinuationsFull):
		return nil, quotaError(err)
	case err != nil:
		return nil, fmt.Errorf("mcpserver: keeping the suspended run failed (infrastructure, retryable): %s", boundTo(oneLine(err.Error()), 1024))
	}
	r.Waiting = &Waiting{Run: r.Run, Name: name, Args: args}
	r.Hint = "The run is waiting for the answer to host." + name + " (waiting.args are its arguments). Get the answer (ask the user when it is theirs to give), then call " + resumeRunName + " with {\"run\": \"" + r.Run + "\", \"answer\": <the answer as JSON>}: the script goes on from there."
	res.StructuredContent = r
	res.Content = text(r)
	return res, nil
}

func resumeRunDefinition() *mcp.Tool {
	return &mcp.Tool{
		Name:  resumeRunName,
		Title: "Resume a suspended run",
		Description: "Continue a run that suspended at a host call that waits for an answer (its result has waiting: the run's id, the host function's name and the arguments the script passed). " +
			"Pass the run's id and the answer, any JSON value: the script's await of the call returns it, and the run goes on. " +
			"The result is a run tool's result; the run may suspend again at a later call. A run is resumed once.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"run":{"type":"string","pattern":"^[0-9a-f]{32}$","description":"the suspended run's id (waiting.run)"},"answer":{"description":"the answer of the call the run waits at, any JSON value"}},"required":["run","answer"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(outputSchema),
		Annotations: &mcp.ToolAnnotations{
			Title: "Resume a run", DestructiveHint: ptr(false), OpenWorldHint: ptr(false),
		},
	}
}

// resumeArgs are resume_run's arguments.
type resumeArgs struct {
	Run    string          `json:"run"`
	Answer json.RawMessage `json:"answer"`
}

// resumeRun answers one call of resume_run: it admits the call, claims
// the caller's suspended run, and runs it on as a run tool runs a
// script.
func (s *Server) resumeRun(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	t := &runTool{s: s, name: resumeRunName}
	var a resumeArgs
	dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil || a.Run == "" || len(a.Answer) == 0 {
		return invalidResult("", `the arguments are {"run": "<waiting.run>", "answer": <any JSON value>}`), nil
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalidResult("", "the arguments must be one JSON object"), nil
	}
	ceiling := s.limits
	var adm Admission
	if s.admit != nil {
		var err error
		if adm, err = s.admit(ctx, req, ""); err != nil {
			switch answerOf(err) {
			case answerInvalid:
				return invalidResult("", oneLine(err.Error())), nil
			case answerQuota:
				return nil, quotaError(err)
			}
			return nil, err
		}
		if adm.Release != nil {
			defer adm.Release()
		}
		ceiling = ceiling.lower(adm.Limits)
	}
	kept, claimed, err := s.continuations.Claim(a.Run)
	switch {
	case err == nil && kept.Owner != adm.Tenant:
		_ = claimed(false)
		err = fs.ErrNotExist // another caller's run is unknown
		fallthrough
	case errors.Is(err, fs.ErrNotExist):
		return invalidResult("", "no suspended run "+effect.Excerpt(a.Run)+": it is unknown, or resumed already"), nil
	case errors.Is(err, storage.ErrResuming):
		return invalidResult("", "run "+a.Run+" is being resumed by another call"), nil
	case err != nil:
		return nil, fmt.Errorf("mcpserver: reading the suspended run failed (infrastructure, retryable): %s", boundTo(oneLine(err.Error()), 1024))
	}
	res, err := s.resumeClaimed(ctx, req, t, kept, a, adm, ceiling, start)
	if cerr := claimed(res != nil && resultHasRecord(res)); cerr != nil {
		s.logCall(ctx, t, "", "continuationNotRemoved", time.Since(start), cerr)
	}
	return res, err
}

// resultHasRecord reports whether a result carries a run's record (a
// value or a typed failure), as opposed to a refusal.
func resultHasRecord(res *mcp.CallToolResult) bool {
	r, ok := res.StructuredContent.(Result)
	return ok && r.Stats != nil
}

// resumeClaimed runs a claimed suspended run on: the continuation
// decoded and checked (durable.Resume), on its engine within the
// caller's admission and ceiling.
func (s *Server) resumeClaimed(ctx context.Context, req *mcp.CallToolRequest, t *runTool, kept storage.Suspended, a resumeArgs, adm Admission, ceiling limits, start time.Time) (*mcp.CallToolResult, error) {
	cont, err := durable.Decode(kept.Continuation)
	if err != nil {
		return invalidResult("", oneLine(err.Error())), nil
	}
	r := cont.Receipt
	if _, err := chooseEngine(s.pool, "", r.Engine); err != nil {
		return invalidResult(r.Engine, oneLine(err.Error())), nil
	}
	entry, err := s.pool.Resolve(r.Engine, "", adm.Engines...)
	if err != nil {
		return toResult(r.Engine, s.limits, nil, err)
	}
	if r.Limits.WallClock > ceiling.wallClock || r.Limits.MemoryBytes > ceiling.memoryBytes {
		return invalidResult(entry.Engine, "the run's limits are above this caller's ceiling"), nil
	}
	eff, err := s.pool.Effect(entry.Engine, adm.Packages...)
	if err != nil {
		return toResult(entry.Engine, s.limits, nil, err)
	}
	d := &durableRun{suspend: kept.Suspend, owner: kept.Owner, resume: cont, answer: a.Answer, keys: s.keys}
	var fns effect.HostFuncs
	if entry.Capabilities.HostCalls {
		fns = s.hostFuncs()
	}
	stop := s.startProgress(ctx, req, r.Limits.WallClock)
	rec, err := d.run(ctx, eff, effect.Call{Host: d.host(fns)})
	stop()
	res, perr := toResult(entry.Engine, s.limits, rec, err)
	if perr == nil && rec != nil && ctx.Err() == nil {
		res, perr = s.keep(res, rec)
	}
	if perr == nil && ctx.Err() == nil {
		res, perr = s.park(res, d)
	}
	outcome := callOutcome(ctx, rec, err)
	s.logCall(ctx, t, entry.Engine, outcome, time.Since(start), perr)
	if ctx.Err() != nil {
		return nil, errCancelled
	}
	return res, perr
}

// durableOptions checks and keeps Options.Suspend and Continuations.
func (s *Server) durableOptions(o *Options) error {
	if len(o.Suspend) == 0 {
		return nil
	}
	s.suspend = o.Suspend
	s.continuations = o.Continuations
	if s.continuations == nil {
		c, err := storage.NewMemoryContinuations(nil)
		if err != nil {
			return err
		}
		s.continuations = c
	}
	if o.Signer != nil {
		ks, err := receipt.NewKeySet(receipt.TrustedKey{PublicKey: o.Signer.PublicKey()})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		s.keys = ks
	}
	return nil
}

// suspendSection is the part of a run tool's description about the host
// functions that suspend; empty without, or on an engine that does not
// declare deterministic.
func (s *Server) suspendSection(caps spi.Capabilities) string {
	if len(s.suspend) == 0 || !caps.Deterministic || !caps.HostCalls {
		return ""
	}
	var names []string
	for _, n := range s.suspend {
		names = append(names, "host."+n+"(args)")
	}
	return "\n\nCalls that wait for an answer: " + strings.Join(names, ", ") + " (await them). Such a call suspends the run: the result is an error whose failure is suspended, with waiting (the run's id, the call's name and arguments). Get the answer, then call " + resumeRunName + " with the run's id and the answer; the script goes on from that call."
}
