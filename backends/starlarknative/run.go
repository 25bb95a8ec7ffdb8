//go:build linux

package starlarknative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"

	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/internal/starlarkguest"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// facts is everything a run left behind that its interpretation needs:
// the one reading of the Starlark guest's runs, starlark-wasm's too.
type facts = starlarkguest.Facts

// childRuntime is the backend's runtime of the run lifecycle (internal/wasm/run,
// whose engine is generic over how the guest runs): a confined child per
// run.
type childRuntime Backend

// groupOverhead is what a run's cgroup may hold beyond the run's memory
// limit: the pages the child's Go runtime touches anew once it is placed
// (new threads' stacks, page tables, the collector's work). The child's
// start-up is charged where it happened, before the run. The conformance
// kit's over case (1.25 × a 32 MiB limit, held) must not fit.
const groupOverhead = 4 << 20

// groupTasks is a run's pids.max: the child's threads (the Go runtime's;
// seccomp refuses a new process).
const groupTasks = 64

// Module implements wasmrun.Runtime: the child's image, made once per
// process.
func (rt *childRuntime) Module(context.Context) (*image, error) { return rt.img, nil }

// Run implements wasmrun.Runtime: the run of one child.
func (rt *childRuntime) Run(runCtx context.Context, r *wasmrun.Run, _ *image, req spi.Request) (facts, error) {
	b := (*Backend)(rt)
	sp, err := b.spares.take()
	if err != nil {
		return facts{}, err
	}
	// The child is reaped, its group removed and a new spare asked for
	// after the run, off its path (Close waits for it).
	b.reaping.Add(1)
	defer func() {
		go func() {
			defer b.reaping.Done()
			sp.discard()
			b.spares.replenish()
		}()
	}()
	if b.groups != nil && sp.memoryBytes != r.Limits.MemoryBytes {
		if err := sp.place(b.groups, r.Limits.MemoryBytes); err != nil {
			return facts{}, err
		}
	}
	c := sp.c
	r.SetPhase(wasmrun.PhaseInput)

	nonce, err := wasmguest.NewNonce()
	if err != nil {
		return facts{}, err
	}
	stdout := r.NewStdout(nonce, starlarkguest.StdoutLimit(r.Limits.MemoryBytes, b.maxResult))
	stderr := wasmguest.NewCapped(starlarkguest.MaxStderrBytes)
	// The run's log sink is closed when Run returns: a line the child's
	// stream still holds then is never delivered.
	var sink spi.LogSink
	if req.Logs != nil {
		g := &gatedSink{inner: req.Logs}
		defer g.close()
		sink = g
	}
	stderrW := wasmguest.NewStderr(nonce, sink, stderr)
	var host spi.Host
	if req.Host != nil {
		host = &starlarkguest.StoppableHost{Inner: req.Host}
	}
	args := strings.Join(starlarkguest.Args(b.maxSteps, b.maxResult, r.Limits.MemoryBytes, req.Logs != nil), " ") + "\n"
	payload := append([]byte(args), wasmguest.SizedPayload(nonce, req.Script, req.Input, host != nil)...)

	// stdin: the payload, then the replies to the script's host calls,
	// served by the reader of stdout as each call record arrives. A
	// payload the pipe's buffer holds is written at once; a larger one on
	// a goroutine (the child reads it as the run's clocks go on).
	written := make(chan struct{})
	if len(payload) <= pipeBuffer {
		_, _ = c.stdin.Write(payload)
		close(written)
	} else {
		go func() {
			defer close(written)
			_, _ = c.stdin.Write(payload)
		}()
	}
	replies := wasmguest.NewStdin(runCtx, nil, stdout, host)
	files := runfiles.New(req) // served to the child's file records
	replies.SetFiles(files)
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := c.stdout.Read(buf)
			if n > 0 {
				_, _ = stdout.Write(buf[:n])
				<-written
				serveCalls(replies, c)
			}
			if err != nil {
				return
			}
		}
	}()
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		_, _ = io.Copy(stderrW, c.stderr)
	}()

	// The run is over when the child has exited, or when it has closed
	// its stdout and stderr (the guest's last act before it exits) after a
	// record that settles the run: then every log line and record is in,
	// and the child's exit (its namespaces' teardown, most of a
	// millisecond) is waited for after the run.
	streams := make(chan struct{})
	go func() {
		<-outDone
		<-errDone
		close(streams)
	}()
	exited := false
	for !exited {
		select {
		case <-c.waited:
			exited = true
		case <-streams:
			streams = nil
			if settles(stdout.Record()) {
				c.kill()
				<-written
				return b.observed(factsOf(r, stdout, stderr, nil, files)), nil
			}
		case <-runCtx.Done():
			// The host's own stop (the wall clock, the cold-start
			// allowance, the caller, Close) decides the run: the child's
			// exit (freeing what it holds, tearing its namespaces down:
			// hundreds of milliseconds for a large heap) is reaped after
			// the run, and what its streams still hold is never read
			// into this run (the stdout sink is sealed at the wall
			// clock; the log sink closes).
			c.kill()
			f := factsOf(r, stdout, stderr, nil, files)
			f.Ending = starlarkguest.EndKilled
			return b.observed(f), nil
		}
	}
	<-outDone
	<-errDone
	<-written
	return b.observed(factsOf(r, stdout, stderr, sp, files)), nil
}

// observed shows f to the test hook, if any, and returns it.
func (b *Backend) observed(f facts) facts {
	if b.observe != nil {
		b.observe(f)
	}
	return f
}

// pipeBuffer is what a pipe holds before a write blocks (Linux's default).
const pipeBuffer = 64 << 10

// settles reports whether a record settles a run whatever the child does
// next: the script's value, its thrown error, or its step budget spent.
func settles(rec wasmguest.Record) bool {
	return rec.Settled() || rec.Kind == wasmguest.RecCPU
}

// factsOf is what the run left behind; ended is the spare whose child
// exited (its exit status and group are read), or nil when the run was
// settled by its record before the child's exit.
func factsOf(r *wasmrun.Run, stdout *wasmguest.Stdout, stderr *wasmguest.Capped, ended *spare, files *runfiles.Set) facts {

	f := facts{
		Record:      stdout.Record(),
		InputRead:   true, // a spare has booted and confined itself before its run
		Started:     stdout.Started(),
		OOM:         bytes.Contains(stderr.Bytes(), []byte("fatal error: out of memory")),
		Stack:       bytes.Contains(stderr.Bytes(), []byte("fatal error: stack overflow")),
		WallExpired: r.WallClockExpired(),
		Late:        r.Late(),
		Stderr:      stderr,
		Files:       files,
	}
	if ended == nil {
		return f
	}
	c, g := ended.c, ended.g
	ws, _ := c.state.Sys().(syscall.WaitStatus)
	switch {
	case c.killed.Load():
		f.Ending = starlarkguest.EndKilled
	case ws.Signaled():
		// A signal the host did not send: the kernel's OOM kill, when
		// the group's events say so (a child that exited has not been
		// killed, so the events are read only here).
		f.Ending, f.Trap = starlarkguest.EndTrap, "signal: "+ws.Signal().String()
		f.OOM = f.OOM || (g != nil && g.OOMKilled())
	default:
		f.Ending, f.ExitCode = starlarkguest.EndExit, uint32(ws.ExitStatus())
	}
	return f
}

// gatedSink is a run's log sink until the run returns: close waits for
// a line being delivered and drops every later one.
type gatedSink struct {
	inner  spi.LogSink
	mu     sync.Mutex
	closed bool
}

// Log implements spi.LogSink.
func (g *gatedSink) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	return g.inner.Log(level, stream, line)
}

func (g *gatedSink) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// serveCalls writes to the child the replies to every host-call and file
// record its stdout holds (none when it holds none).
func serveCalls(replies *wasmguest.Stdin, c *child) {
	buf := make([]byte, 32<<10)
	for {
		n, err := replies.Read(buf)
		if n > 0 {
			if _, werr := c.stdin.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Conclude implements wasmrun.Runtime.
func (rt *childRuntime) Conclude(_ *wasmrun.Run, f facts, _ spi.Request) (spi.Outcome, error) {
	out, err := f.Interpret()
	if err != nil {
		return spi.Outcome{}, fmt.Errorf("starlarknative: %w; stderr: %q", err, f.Stderr.Head(256))
	}
	return out, nil
}
