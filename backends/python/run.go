//go:build linux

package python

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sandbank/sandbank/internal/cgroup"
	"github.com/sandbank/sandbank/spi"
)

// Evaluate starts a new sandboxed interpreter, hands it the script and the
// input, relays its log lines and host calls, and reports how it ended.
// The process group is killed with SIGKILL when the run ends, at the wall
// clock, when ctx is done, and (through the parent-death signal) when the
// host process dies.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	begun := time.Now()
	p, err := b.spawn(req)
	if err != nil {
		return spi.Outcome{}, err
	}
	defer p.stop()
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	go p.session(hctx, req)

	allowance := time.NewTimer(b.startup)
	defer allowance.Stop()
	var expired <-chan time.Time
	var start time.Time
	started := p.started
	stats := func(out spi.Outcome) spi.Outcome {
		if req.Logs != nil && !start.IsZero() {
			out.Stats = spi.Stats{Startup: start.Sub(begun), ScriptTime: time.Since(start)}
			p.groupStats(&out.Stats) // cgroup.go
		}
		return out
	}
	for {
		select {
		case <-started:
			started, start = nil, time.Now()
			allowance.Stop()
			if req.Limits.WallClock > 0 {
				t := time.NewTimer(req.Limits.WallClock)
				defer t.Stop()
				expired = t.C
			}
		case out := <-p.done:
			// A value the script produced past its wall clock is never
			// delivered: the clock is a limit, whoever noticed first.
			if !start.IsZero() && req.Limits.WallClock > 0 && time.Since(start) > req.Limits.WallClock && out.Kind == spi.KindOK {
				return stats(spi.Limited(spi.LimitWallClock)), nil
			}
			return stats(out), nil
		case <-expired:
			p.kill()
			return stats(spi.Limited(spi.LimitWallClock)), nil
		case <-allowance.C:
			if start.IsZero() {
				p.kill()
				return spi.Outcome{}, &spi.StartupError{Backend: "python", Phase: "boot", Allowance: b.startup}
			}
		case <-ctx.Done():
			p.kill()
			return spi.Outcome{}, ctx.Err()
		}
	}
}

// proc is one run's sandboxed process.
type proc struct {
	b       *Backend
	cmd     *exec.Cmd
	in      *os.File // the runner's protocol input (our write end)
	out     *os.File // the runner's protocol output (our read end)
	stderr  *boundedBuffer
	errDone chan struct{} // closed once stderr is drained
	started chan struct{} // closed when the script starts
	done    chan spi.Outcome
	inMu    sync.Mutex    // one writer at a time: the request, then answers
	answers *answers      // host-call answers for the runner
	waited  chan struct{} // closed once the process has been waited for
	once    sync.Once
	group   *cgroup.Group // the run's cgroup, nil without one (cgroup.go)
}

// spawn starts bubblewrap with the runner and writes the request.
func (b *Backend) spawn(req spi.Request) (*proc, error) {
	filterR, filterW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoOutcome, err)
	}
	defer filterR.Close()
	// The filter is a few hundred bytes: the pipe's buffer holds it.
	_, werr := filterW.Write(b.filter)
	filterW.Close()
	if werr != nil {
		return nil, fmt.Errorf("%w: %v", errNoOutcome, werr)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoOutcome, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("%w: %v", errNoOutcome, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("%w: %v", errNoOutcome, err)
	}
	cmd := exec.Command(b.bwrap, b.argv(req.Limits)...)
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.ExtraFiles = []*os.File{filterR} // fd 3: --seccomp 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	group, err := b.startInGroup(cmd, req.Limits) // cgroup.go
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("%w: %v", errNoOutcome, err)
	}
	p := &proc{
		b: b, cmd: cmd, in: inW, out: outR,
		stderr:  &boundedBuffer{max: 4 << 10},
		errDone: make(chan struct{}),
		started: make(chan struct{}),
		done:    make(chan spi.Outcome, 1),
		waited:  make(chan struct{}),
		answers: newAnswers(),
		group:   group,
	}
	go func() {
		_, _ = io.Copy(p.stderr, errR)
		errR.Close()
		close(p.errDone)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.waited)
	}()
	go p.writeRequest(req)
	go p.writeAnswers()
	return p, nil
}

// argv is bubblewrap's command line for one run.
func (b *Backend) argv(limits spi.Limits) []string {
	args := []string{
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--uid", sandboxUID, "--gid", sandboxUID, "--hostname", "sandbank",
		"--disable-userns", "--cap-drop", "ALL",
		"--die-with-parent", "--new-session", "--clearenv",
		"--setenv", "PYTHONHASHSEED", "0",
		"--seccomp", "3",
	}
	args = append(args, b.lay.args...)
	if b.scratch > 0 {
		args = append(args, "--size", strconv.FormatInt(b.scratch, 10), "--tmpfs", "/tmp", "--chdir", "/tmp")
	} else {
		args = append(args, "--chdir", "/")
	}
	args = append(args, "--remount-ro", "/", "--", b.lay.python, "-S", "-s", "-B", "-c", b.program(), b.runnerLimits(limits)) // landlock.go
	return args
}

// runnerLimits is the runner's argument: the run's bounds.
func (b *Backend) runnerLimits(limits spi.Limits) string {
	as := b.addressSpace(limits) // cgroup.go
	fsize := b.scratch
	if fsize <= 0 {
		fsize = 0
	}
	text, _ := json.Marshal(map[string]any{
		"as": as, "cpu": b.cpuSecs, "cpuMs": max(b.cpu.Milliseconds(), 1), "nofile": maxOpenFiles, "nproc": maxThreads, "fsize": fsize,
		"seed": b.seed, "tag": b.tag, "path": b.lay.path, "maxLine": spi.MaxLogLineBytes, "maxResult": b.maxResult,
	})
	return string(text)
}

// writeRequest writes the header, the script and the input. A runner
// that ended early (a memory limit while reading) closes its end: the
// write fails and the session reports what the runner said.
func (p *proc) writeRequest(req spi.Request) {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	header := fmt.Appendf(nil, "{\"s\":%d,\"i\":%d}\n", len(req.Script), len(input))
	for _, part := range [][]byte{header, req.Script, input} {
		if _, err := p.in.Write(part); err != nil {
			return
		}
	}
}

// kill ends the process group with SIGKILL. bubblewrap's own children are
// in a new session; they die with it (--die-with-parent, and the pid
// namespace ends with its first process).
func (p *proc) kill() {
	p.once.Do(func() {
		p.answers.close()
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.in.Close()
	})
}

// stop kills the process and releases its pipes once it has been waited
// for, in the background.
func (p *proc) stop() {
	p.kill()
	go func() {
		<-p.waited
		p.out.Close()
		p.removeGroup() // cgroup.go
	}()
}

// msg is one line from the runner.
type msg struct {
	T string          `json:"t"`
	L string          `json:"l"` // log level
	S string          `json:"s"` // log stream
	M string          `json:"m"` // log line, error message
	N string          `json:"n"` // host function, error name
	A json.RawMessage `json:"a"` // host call argument
	K string          `json:"k"` // limit kind
	I *uint64         `json:"i"` // host call id
}

// session reads the runner's lines until the run ends and sends the
// outcome on p.done.
func (p *proc) session(ctx context.Context, req spi.Request) {
	r := bufio.NewReaderSize(p.out, 64<<10)
	maxLine := int(min(p.b.maxResult, 1<<40)) + 1<<10
	for {
		line, err := readLine(r, maxLine)
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				p.done <- spi.Threw("Error", "python: the run wrote a line longer than the protocol allows")
				return
			}
			p.done <- p.exited()
			return
		}
		var m msg
		if json.Unmarshal(line, &m) != nil {
			p.done <- protocolBroken()
			return
		}
		switch m.T {
		case "start":
			select {
			case <-p.started:
			default:
				close(p.started)
			}
		case "log":
			level, stream := logLevel(m.L), logStream(m.S)
			if level == 0 || stream == 0 {
				p.done <- protocolBroken()
				return
			}
			req.Log(level, stream, m.M)
		case "call":
			if m.I == nil {
				p.done <- protocolBroken()
				return
			}
			if ctx.Err() != nil {
				// The run has ended (or its context is done, which
				// Evaluate reports): the broker is not called again.
				return
			}
			p.hostCall(ctx, req, *m.I, m)
		case "ok":
			value, err := readLine(r, maxLine)
			if err != nil || !json.Valid(value) {
				p.done <- protocolBroken()
				return
			}
			p.done <- spi.OK(json.RawMessage(bytes.Clone(value)))
			return
		case "threw":
			p.done <- spi.Threw(m.N, m.M)
			return
		case "limit":
			if m.K != "memory" {
				p.done <- protocolBroken()
				return
			}
			p.done <- spi.Limited(spi.LimitMemory)
			return
		case "input":
			p.done <- spi.InputTooLarge()
			return
		default:
			p.done <- protocolBroken()
			return
		}
	}
}

// protocolBroken is the outcome of a run that wrote something the runner
// never writes: the script wrote to the runner's channel (they share the
// process), so it is the script's failure.
func protocolBroken() spi.Outcome {
	return spi.Threw("Error", "python: the script wrote to the runner's channel")
}

// exited reports a run whose process ended without an outcome.
func (p *proc) exited() spi.Outcome {
	<-p.waited
	<-p.errDone
	st := p.cmd.ProcessState
	if st == nil {
		return spi.Infrastructure("python: the sandbox ended without a state")
	}
	code := st.ExitCode()
	var cpu time.Duration
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	started := false
	select {
	case <-p.started:
		started = true
	default:
	}
	if out, ok := p.groupOutcome(started); ok { // cgroup.go
		return out
	}
	budget := p.b.cpu
	sig := syscall.Signal(code - 128)
	switch {
	case code > 128 && (sig == syscall.SIGPROF || sig == syscall.SIGXCPU || (sig == syscall.SIGKILL && cpu >= budget)):
		return spi.Limited(spi.LimitCPU)
	case cpu >= budget:
		return spi.Limited(spi.LimitCPU)
	case !started && code == 1:
		// bubblewrap's own failure (it exits 1 with its reason).
		return spi.Infrastructure("python: the sandbox did not start: " + firstLine(p.stderr.Bytes()))
	case code > 128 && p.stderr.mentionsMemory():
		return spi.Limited(spi.LimitMemory)
	case code > 128:
		return spi.Threw("InternalError", fmt.Sprintf("python: the interpreter ended with signal %d on this script", int(sig)))
	default:
		return spi.Threw("SystemExit", "python: the script ended the interpreter without a result")
	}
}

func logLevel(s string) spi.LogLevel {
	var l spi.LogLevel
	if l.UnmarshalText([]byte(s)) != nil {
		return 0
	}
	return l
}

func logStream(s string) spi.LogStream {
	var st spi.LogStream
	if st.UnmarshalText([]byte(s)) != nil {
		return 0
	}
	return st
}

// errNoHost answers the host calls of a run that has no host functions.
var errNoHost = errors.New("python: this run has no host functions")

var errLineTooLong = errors.New("python: line too long")

// readLine reads one line, without its newline, of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			if line == nil {
				return chunk[:len(chunk)-1], nil
			}
			line = append(line, chunk...)
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
		default:
			return nil, err
		}
	}
}

// boundedBuffer keeps the first max bytes written to it and discards the
// rest.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *boundedBuffer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.b...)
}

func (w *boundedBuffer) mentionsMemory() bool {
	b := w.Bytes()
	for _, s := range []string{"MemoryError", "Cannot allocate memory", "out of memory"} {
		if containsFold(b, s) {
			return true
		}
	}
	return false
}

func containsFold(b []byte, s string) bool {
	return bytes.Contains(bytes.ToLower(b), bytes.ToLower([]byte(s)))
}
