//go:build linux

package starlarknative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/sandbank/sandbank/internal/cgroup"
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
	c, err := b.spares.take()
	if err != nil {
		return facts{}, err
	}
	defer c.discard()
	var g *cgroup.Group
	if b.groups != nil {
		l := cgroup.Limits{MemoryBytes: r.Limits.MemoryBytes + groupOverhead, Tasks: groupTasks}
		if g, err = b.groups.New(l); err != nil {
			return facts{}, fmt.Errorf("%w: %v", errNoOutcome, err)
		}
		defer g.Remove()
		// The child is blocked reading its stdin: nothing the group
		// should bound runs before it is in the group.
		if err := g.Place(c.cmd.Process.Pid); err != nil {
			return facts{}, fmt.Errorf("%w: %v", errNoOutcome, err)
		}
	}
	r.SetPhase(wasmrun.PhaseInput)

	nonce, err := wasmguest.NewNonce()
	if err != nil {
		return facts{}, err
	}
	stdout := r.NewStdout(nonce, starlarkguest.StdoutLimit(r.Limits.MemoryBytes, b.maxResult))
	stderr := wasmguest.NewCapped(starlarkguest.MaxStderrBytes)
	stderrW := wasmguest.NewStderr(nonce, req.Logs, stderr)
	var host spi.Host
	if req.Host != nil {
		host = &starlarkguest.StoppableHost{Inner: req.Host}
	}
	args := strings.Join(starlarkguest.Args(b.maxSteps, b.maxResult, r.Limits.MemoryBytes, req.Logs != nil), " ") + "\n"
	payload := append([]byte(args), wasmguest.SizedPayload(nonce, req.Script, req.Input, host != nil)...)

	// stdin: the payload, written on a goroutine (the child reads it
	// while it converts the input), then the replies to the script's host
	// calls, served by the reader of stdout as each call record arrives.
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, _ = c.stdin.Write(payload)
	}()
	replies := wasmguest.NewStdin(runCtx, nil, stdout, host)
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := c.stdout.Read(buf)
			if n > 0 {
				_, _ = stdout.Write(buf[:n])
				if host != nil {
					<-written
					serveCalls(replies, c)
				}
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

	select {
	case <-c.waited:
	case <-runCtx.Done():
		c.kill()
		<-c.waited
	}
	<-outDone
	<-errDone
	<-written

	f := facts{
		Record:      stdout.Record(),
		InputRead:   true, // a spare has booted and confined itself before its run
		Started:     stdout.Started(),
		OOM:         (g != nil && g.OOMKilled()) || bytes.Contains(stderr.Bytes(), []byte("fatal error: out of memory")),
		Stack:       bytes.Contains(stderr.Bytes(), []byte("fatal error: stack overflow")),
		WallExpired: r.WallClockExpired(),
		Late:        r.Late(),
		Stderr:      stderr,
	}
	ws, _ := c.state.Sys().(syscall.WaitStatus)
	switch {
	case c.killed.Load():
		f.Ending = starlarkguest.EndKilled
	case ws.Signaled():
		f.Ending, f.Trap = starlarkguest.EndTrap, "signal: "+ws.Signal().String()
	default:
		f.Ending, f.ExitCode = starlarkguest.EndExit, uint32(ws.ExitStatus())
	}
	if b.observe != nil {
		b.observe(f)
	}
	return f, nil
}

// serveCalls writes to the child the replies to every host-call record
// its stdout holds (none when it holds none).
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
