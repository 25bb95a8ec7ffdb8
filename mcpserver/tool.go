package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/storage"
)

// errClosed answers a call after Server.Close.
var errClosed = errors.New("mcpserver: the server is closed")

// runTool is one run_LANGUAGE tool: its language and engine. The engine's
// effect is the server's pool's, built on first use.
type runTool struct {
	s      *Server
	name   string // run_<language>
	lang   string
	entry  registry.Entry // the tool's engine
	chosen string         // the engine Options.Engines chose; "" for the default
}

// handle answers one call of the tool. A typed failure and a mistake in
// the arguments are tool results with IsError set, which the model reads;
// an infrastructure error, or the client's cancellation, is a protocol
// error.
func (t *runTool) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	engine := t.entry.Engine
	hostCalls := t.entry.Capabilities.HostCalls
	ceiling := t.s.limits
	owner := ""           // the caller's Admission.Tenant: who may resume a run it suspends
	var packages []string // the caller's Admission.Packages: what its python runs may import
	if t.s.admit != nil {
		adm, err := t.s.admit(ctx, req, t.entry.Engine)
		if err != nil {
			switch answerOf(err) {
			case answerInvalid:
				t.s.logCall(ctx, t, engine, "refused", time.Since(start), nil)
				return invalidResult(engine, oneLine(err.Error())), nil
			case answerQuota:
				t.s.logCall(ctx, t, engine, "refused", time.Since(start), err)
				return nil, quotaError(err)
			}
			t.s.logCall(ctx, t, engine, "refused", time.Since(start), err)
			return nil, err
		}
		if adm.Release != nil {
			defer adm.Release()
		}
		ceiling = ceiling.lower(adm.Limits)
		owner, packages = adm.Tenant, adm.Packages
		if len(adm.Engines) > 0 {
			// The one policy of every door: the tool's engine when the
			// caller may use it, else the first it may of the language.
			e, err := t.s.pool.Resolve(t.chosen, t.lang, adm.Engines...)
			if err != nil {
				res, perr := toResult(engine, t.s.limits, nil, err)
				t.s.logCall(ctx, t, engine, "refused", time.Since(start), perr)
				return res, perr
			}
			engine, hostCalls = e.Engine, e.Capabilities.HostCalls
		}
	}
	args, problem := decodeArgs(req.Params.Arguments, ceiling)
	if problem != "" {
		t.s.logCall(ctx, t, engine, "invalidArguments", time.Since(start), nil)
		return invalidResult(engine, problem), nil
	}
	eff, err := t.s.pool.Effect(engine, packages...)
	if err != nil {
		res, perr := toResult(engine, t.s.limits, nil, err)
		t.s.logCall(ctx, t, engine, record.OutcomeInfrastructure, time.Since(start), perr)
		return res, perr
	}
	stop := t.s.startProgress(ctx, req, args.limits.WallClock)
	call := effect.Call{Source: []byte(args.script), Input: args.input, Limits: args.limits, Files: args.files}
	if hostCalls {
		call.Host = t.s.hostFuncs() // Options.Host's (host.go); nil without
	}
	var d *durableRun // nil unless Options.Suspend and a deterministic engine (durable.go)
	d, call.Host = t.s.durableFor(engine, owner, call.Host)
	rec, err := d.run(ctx, eff, call)
	stop()
	res, perr := toResult(engine, t.s.limits, rec, err)
	if perr == nil && rec != nil && ctx.Err() == nil {
		res, perr = t.s.keep(res, rec)
	}
	if perr == nil && ctx.Err() == nil {
		res, perr = t.s.park(res, d)
	}
	outcome := callOutcome(ctx, rec, err)
	t.s.logCall(ctx, t, engine, outcome, time.Since(start), perr)
	if ctx.Err() != nil {
		return nil, errCancelled
	}
	return res, perr
}

// logCall writes the server's one record about a call.
func (s *Server) logCall(ctx context.Context, t *runTool, engine, outcome string, d time.Duration, err error) {
	if s.logger == nil {
		return
	}
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("tool", t.name),
		slog.String("engine", engine),
		slog.String("outcome", outcome),
		slog.Duration("duration", d),
	}
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", oneLine(err.Error())))
	}
	s.logger.LogAttrs(context.WithoutCancel(ctx), level, "mcpserver: call", attrs...)
}

// keep keeps the receipt of a run answered with its record in
// Options.Receipts, if any, and names its run id in the result.
func (s *Server) keep(res *mcp.CallToolResult, rec *effect.Record) (*mcp.CallToolResult, error) {
	r, ok := res.StructuredContent.(Result)
	if s.receipts == nil || !ok {
		return res, nil
	}
	run := storage.NewRunID()
	if err := s.receipts.Append(run, rec.Receipt); err != nil {
		return nil, fmt.Errorf("mcpserver: keeping the run's receipt failed (infrastructure, retryable): %s", boundTo(oneLine(err.Error()), 1024))
	}
	r.Run = run
	res.StructuredContent = r
	return res, nil
}

// callOutcome is what a tool call's log line says of its run: the
// receipt's outcome when the run has a record, else canceled,
// invalidCall or infrastructure.
func callOutcome(ctx context.Context, rec *effect.Record, err error) string {
	switch {
	case ctx.Err() != nil:
		return record.OutcomeCanceled
	case rec != nil:
		return rec.Receipt.Outcome
	case answerOf(err) == answerInvalid:
		return "invalidCall"
	}
	return record.OutcomeInfrastructure
}
