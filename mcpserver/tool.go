package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// errClosed answers a call after Server.Close.
var errClosed = errors.New("mcpserver: the server is closed")

// runTool is one run_LANGUAGE tool: its engine, and the effect over that
// engine's backend, built on first use.
type runTool struct {
	s       *Server
	name    string // run_<language>
	lang    string
	entry   registry.Entry
	factory spi.Factory
	effOpts effect.Options

	mu     sync.Mutex
	eff    *effect.Effect
	closed bool
}

func newRunTool(s *Server, entry registry.Entry, o *Options) *runTool {
	t := &runTool{
		s:       s,
		name:    "run_" + entry.Language,
		lang:    entry.Language,
		entry:   entry,
		factory: entry.Factory,
		effOpts: effect.Options{
			Limits:         spi.Limits{WallClock: s.limits.wallClock, MemoryBytes: s.limits.memoryBytes},
			MaxInputBytes:  s.limits.maxInput,
			MaxOutputBytes: s.limits.maxOutput,
			MaxScriptBytes: s.limits.maxScript,
			Engine:         entry.Engine,
		},
	}
	if o.Factory != nil {
		if f := o.Factory(entry); f != nil {
			t.factory = f
		}
	}
	return t
}

// effect returns the tool's effect, building its backend on first use. A
// build that failed is tried again on the next call.
func (t *runTool) effect() (*effect.Effect, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, errClosed
	case t.eff != nil:
		return t.eff, nil
	}
	b, err := build(t.factory)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: building engine %s: %w", t.entry.Engine, err)
	}
	eff, err := effect.New(effect.NewMemoryStore(), b, &t.effOpts)
	if err != nil {
		if c, ok := b.(io.Closer); ok {
			_ = c.Close()
		}
		return nil, fmt.Errorf("mcpserver: engine %s: %w", t.entry.Engine, err)
	}
	t.eff = eff
	return eff, nil
}

// build calls f, recovering a panic into an error.
func build(f spi.Factory) (b spi.Backend, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("the engine's factory panicked: %v", p)
		}
	}()
	b, err = f()
	if err == nil && b == nil {
		err = errors.New("the engine's factory returned no backend")
	}
	return b, err
}

func (t *runTool) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.eff == nil {
		return nil
	}
	err := t.eff.Close()
	t.eff = nil
	return err
}

// handle answers one call of the tool. A typed failure and a mistake in
// the arguments are tool results with IsError set, which the model reads;
// an infrastructure error, or the client's cancellation, is a protocol
// error.
func (t *runTool) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	ceiling := t.s.limits
	if t.s.admit != nil {
		adm, err := t.s.admit(ctx, req, t.entry.Engine)
		if err != nil {
			if answerOf(err) == answerInvalid {
				t.s.logCall(ctx, t, "refused", time.Since(start), nil)
				return invalidResult(t.entry.Engine, oneLine(err.Error())), nil
			}
			t.s.logCall(ctx, t, "refused", time.Since(start), err)
			return nil, err
		}
		if adm.Release != nil {
			defer adm.Release()
		}
		ceiling = ceiling.lower(adm.Limits)
	}
	args, problem := decodeArgs(req.Params.Arguments, ceiling)
	if problem != "" {
		t.s.logCall(ctx, t, "invalidArguments", time.Since(start), nil)
		return invalidResult(t.entry.Engine, problem), nil
	}
	// A call that sets no limit of its own runs at the ceiling, which an
	// admission may have lowered below the server's.
	if args.limits.WallClock == 0 {
		args.limits.WallClock = ceiling.wallClock
	}
	if args.limits.MemoryBytes == 0 {
		args.limits.MemoryBytes = ceiling.memoryBytes
	}
	eff, err := t.effect()
	if err != nil {
		t.s.logCall(ctx, t, effect.OutcomeInfrastructure, time.Since(start), err)
		return nil, err
	}
	stop := t.s.startProgress(ctx, req, args.limits.WallClock)
	rec, err := eff.Run(ctx, effect.Call{Source: []byte(args.script), Input: args.input, Limits: args.limits})
	stop()
	res, perr := toResult(t.entry.Engine, t.s.limits, rec, err)
	outcome := effect.OutcomeInfrastructure
	switch {
	case ctx.Err() != nil:
		outcome = effect.OutcomeCanceled
	case rec != nil:
		outcome = rec.Receipt.Outcome
	case answerOf(err) == answerInvalid:
		outcome = "invalidCall"
	}
	t.s.logCall(ctx, t, outcome, time.Since(start), perr)
	if ctx.Err() != nil {
		return nil, errCancelled
	}
	return res, perr
}

// logCall writes the server's one record about a call.
func (s *Server) logCall(ctx context.Context, t *runTool, outcome string, d time.Duration, err error) {
	if s.logger == nil {
		return
	}
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("tool", t.name),
		slog.String("engine", t.entry.Engine),
		slog.String("outcome", outcome),
		slog.Duration("duration", d),
	}
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", oneLine(err.Error())))
	}
	s.logger.LogAttrs(context.WithoutCancel(ctx), level, "mcpserver: call", attrs...)
}
