//go:build linux

package python

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
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
//
// The outcome is decided here, from what the host observes (its timers,
// the process's exit status and resource usage): of what the process
// writes once the script runs, only the script's value, its thrown error,
// its log lines and its host calls are believed (docs/design.md, "A
// guest that shares a process with the script").
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if err := b.ready(ctx); err != nil { // machine.go: once
		return spi.Outcome{}, err
	}
	return b.evaluate(ctx, req)
}

// evaluate is Evaluate on a checked machine.
func (b *Backend) evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if inputCannotFit(len(input), req.Limits.MemoryBytes) || filesCannotFit(req.Files, b.scratch) { // files.go
		return spi.InputTooLarge(), nil
	}
	if out, clash := outDirClash(req.Files); clash { // files.go
		return out, nil
	}
	begun := time.Now()
	p, err := b.spawn(req)
	if err != nil {
		return spi.Outcome{}, err
	}
	defer p.stop()
	// Here the process exists and the runner waits for its request: no
	// byte of the script has been read. (A per-run cgroup is joined here.)
	go p.writeRequest(req.Script, input, req.Files)
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	go p.session(hctx, req)

	allowance := time.NewTimer(b.startup)
	defer allowance.Stop()
	var expired <-chan time.Time
	var start time.Time
	started := p.started
	var end *ending
	var exited <-chan struct{} // set once the ending needs the exit observed
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
		case e := <-p.ended:
			// A value the script produced past its wall clock is never
			// delivered: the clock is a limit, whoever noticed first.
			if !start.IsZero() && req.Limits.WallClock > 0 && time.Since(start) > req.Limits.WallClock {
				p.hostEnds()
				return stats(spi.Limited(spi.LimitWallClock)), nil
			}
			if !e.needsExit() {
				p.clean.Store(e.kind == endValue || e.kind == endThrew)
				return stats(b.conclude(e, observation{memoryLimited: b.addressSpace(req.Limits) > 0})), nil
			}
			end, exited = &e, p.waited
		case <-exited:
			<-p.errDone
			return stats(b.conclude(*end, p.observe(req.Limits))), nil
		case <-expired:
			p.hostEnds()
			return stats(spi.Limited(spi.LimitWallClock)), nil
		case <-allowance.C:
			if start.IsZero() {
				p.kill()
				return spi.Outcome{}, &spi.StartupError{Backend: "python", Phase: "boot", Allowance: b.startup}
			}
		case <-ctx.Done():
			p.hostEnds()
			return spi.Outcome{}, ctx.Err()
		}
	}
}

// inputCannotFit is the host's own check of an input against the memory
// limit, before anything starts: the runner holds the input's text and,
// while parsing it, the same text decoded (json.loads decodes bytes to a
// str first), so an input of more than half the limit cannot be parsed
// within it. An input that passes may still not fit once parsed: the
// runner then says so before the script starts (the M frame), while
// only the host's own code has run in the process.
func inputCannotFit(n int, memoryBytes int64) bool {
	return memoryBytes > 0 && 2*int64(n) > memoryBytes
}

// proc is one run's sandboxed process.
type proc struct {
	b       *Backend
	cmd     *exec.Cmd
	in      *os.File // the runner's protocol input (our write end)
	out     *os.File // the runner's protocol output (our read end)
	stderr  *boundedBuffer
	errDone chan struct{} // closed once stderr is drained
	started chan struct{} // closed when the start frame arrives
	ended   chan ending   // the frames' account of the end (one)
	inMu    sync.Mutex    // one writer at a time: the request, then answers
	answers *answers      // host-call answers for the runner
	waited  chan struct{} // closed once the process has been waited for
	once    sync.Once
	// frameMax bounds the value and host-call frames: the most the
	// run may hold (its memory limit), or MaxResultBytes.
	frameMax int64
	group    *cgroup.Group // the run's cgroup, nil without one (cgroup.go)
	// A run forked by the zygote (zygote.go; cmd is nil): what the
	// zygote reports of it, the run's pidfd, whether the run ended with its own
	// value or thrown error, and whether the host ended it (its wall
	// clock, the caller's context); else the zygote is replaced.
	zr        *zrun
	z         *zygote
	pidfd     int
	killed    chan struct{}
	clean     atomic.Bool
	hostEnded atomic.Bool
	// files are the output files read so far (files.go).
	files *outFiles
}

// spawn starts the run's process, which then waits for its request: a
// fork of the backend's zygote (zygote.go) where it has one, else a
// sandbox of its own.
func (b *Backend) spawn(req spi.Request) (*proc, error) {
	if b.useZygote {
		for range 2 {
			z, err := b.zygote()
			if err != nil {
				if b.zygotes.only {
					return nil, noOutcome(err)
				}
				break
			}
			p, err := b.spawnFromZygote(z, req)
			if errors.Is(err, errZygoteGone) {
				continue // nothing of the run started: another zygote
			}
			return p, err
		}
		if b.zygotes.only {
			return nil, fmt.Errorf("%w: no zygote", errNoOutcome)
		}
	}
	return b.spawnSandbox(req)
}

// spawnSandbox starts bubblewrap with the runner, which then waits for
// its request.
func (b *Backend) spawnSandbox(req spi.Request) (*proc, error) {
	var h handles
	defer h.close()
	fail := func(err error) (*proc, error) { return nil, noOutcome(err) }
	filterR, filterW, err := h.pipe()
	if err != nil {
		return fail(err)
	}
	// The filter is a few hundred bytes: the pipe's buffer holds it.
	_, err = filterW.Write(b.filter)
	h.drop(filterW)
	if err != nil {
		return fail(err)
	}
	inR, inW, err := h.pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := h.pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := h.pipe()
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(b.bwrap, b.argv(req.Limits)...)
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.ExtraFiles = []*os.File{filterR} // fd 3: --seccomp 3
	// fds 4 and up: the sandbox inherits no other descriptor
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	group, err := b.startInGroup(cmd, req.Limits) // cgroup.go
	if err != nil {
		return fail(err)
	}
	h.keep(inW, outR, errR) // the run's; the sandbox's ends close here
	p := &proc{
		b: b, cmd: cmd, in: inW, out: outR,
		stderr:   &boundedBuffer{max: 4 << 10},
		errDone:  make(chan struct{}),
		started:  make(chan struct{}),
		ended:    make(chan ending, 1),
		waited:   make(chan struct{}),
		frameMax: b.maxResult,
		group:    group,
	}
	p.begin(req.Limits, errR)
	go func() {
		_ = cmd.Wait()
		close(p.waited)
	}()
	go p.writeAnswers()
	return p, nil
}

// argv is bubblewrap's command line for one run. The interpreter is pid 1
// of its pid namespace (--as-pid-1): bubblewrap then waits for it itself,
// so the resource usage the host reads when it waits for bubblewrap is
// the interpreter's; and a signal the script sends itself without a
// handler (SIGKILL included) is ignored.
func (b *Backend) argv(limits spi.Limits) []string {
	args := []string{
		"--unshare-user", "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
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
	args = append(args, "--remount-ro", "/", "--", b.lay.python, "-S", "-s", "-B", "-c", b.program(), b.runnerLimits(limits, b.lay.base)) // landlock.go
	return args
}

// begin bounds the run's value and host-call frames by what the run may
// hold (its memory limit), sets up its answers, and drains its stderr
// (errR) into p.stderr.
func (p *proc) begin(limits spi.Limits, errR *os.File) {
	if limits.MemoryBytes > 0 {
		p.frameMax = min(p.frameMax, p.b.lay.base+limits.MemoryBytes)
	}
	p.answers = newAnswers(p.frameMax)
	go func() {
		_, _ = io.Copy(p.stderr, errR)
		errR.Close()
		close(p.errDone)
	}()
}

// runnerLimits is the runner's argument: the run's bounds, its address
// space counted from base (the interpreter's, as the run's process
// starts).
func (b *Backend) runnerLimits(limits spi.Limits, base int64) string {
	as := b.addressSpace(limits) // cgroup.go
	if as > 0 {
		as += base - b.lay.base
	}
	fsize := b.scratch
	if fsize <= 0 {
		fsize = 0
	}
	text, _ := json.Marshal(map[string]any{
		"as": as, "cpu": b.cpuSecs, "cpuMs": max(b.cpu.Milliseconds(), 1), "nofile": maxOpenFiles, "nproc": maxThreads, "fsize": fsize,
		"seed": b.seed, "tag": b.tag, "path": b.lay.path, "maxLine": spi.MaxLogLineBytes, "maxText": maxErrorTextBytes, "maxResult": b.maxResult,
		"packages": json.RawMessage(cmpOr(b.lay.packages, "null")), // packages.go
	})
	return string(text)
}

// writeRequest writes the header, the script and the input. A runner
// that ended early (a memory limit while reading) closes its end: the
// write fails and the session reports what the runner said.
func (p *proc) writeRequest(script, input []byte, files []spi.File) {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	header, _ := json.Marshal(map[string]any{"s": len(script), "i": len(input), "f": filesHeader(files)}) // files.go
	parts := [][]byte{append(header, '\n'), script, input}
	for _, f := range files {
		parts = append(parts, f.Data)
	}
	for _, part := range parts {
		if _, err := p.in.Write(part); err != nil {
			return
		}
	}
}

// kill ends the process group with SIGKILL. bubblewrap's own children are
// in a new session; they die with it (--die-with-parent).
func (p *proc) kill() {
	p.once.Do(func() {
		p.answers.close()
		if p.zr != nil {
			p.killRun() // zygote.go
		} else {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
		p.in.Close()
	})
}

// hostEnds kills the run on the host's own decision: its wall clock, or
// the caller's context done. Such a run did nothing the host did not
// cause, so it keeps its zygote, once the zygote has seen it end by the
// host's SIGKILL (stopRun, zygote.go).
func (p *proc) hostEnds() {
	p.hostEnded.Store(true)
	p.kill()
}

// stop kills the process and releases its pipes once it has been waited
// for, in the background.
func (p *proc) stop() {
	p.kill()
	if p.zr != nil {
		if !p.clean.Load() && !p.hostEnded.Load() {
			// A run that ended other than with its own value or error
			// takes its zygote out of service now, before the caller can
			// ask for another run (zygote.go).
			p.z.retire()
		}
		go p.stopRun() // zygote.go
		return
	}
	go func() {
		<-p.waited
		p.out.Close()
		p.removeGroup() // cgroup.go
	}()
}

// The frames the runner writes (runner.py has the layout): a kind byte,
// the payload's length (4 bytes, big-endian), the payload.
const (
	frameStart  = 'S' // the script starts (empty)
	frameLog    = 'L' // level byte, stream byte, the line in UTF-8
	frameCall   = 'C' // the name's length (a byte), the name, the argument's JSON text
	frameValue  = 'V' // the value's JSON text
	frameThrew  = 'T' // the name's length (a byte), the name, the message in UTF-8
	frameMemory = 'M' // before S only: the request did not fit ("s" the script, "i" the input)
)

// maxErrorTextBytes bounds a thrown error's message: the effect keeps
// effect.MaxTextUnits UTF-16 units of it, at most three bytes of UTF-8
// each, and the runner sends one unit more so that the effect marks the
// cut (TestErrorTextBoundCoversTheEffects).
const maxErrorTextBytes = 3*(2048+1) + 3

// maxNameBytes bounds an error's or a host function's name.
const maxNameBytes = 255

// frameBound is the most a frame of kind may hold, or -1 for a kind the
// runner never writes.
func (p *proc) frameBound(kind byte) int64 {
	switch kind {
	case frameStart:
		return 0
	case frameLog:
		return 2 + spi.MaxLogLineBytes
	case frameCall:
		return 1 + maxNameBytes + p.frameMax
	case frameValue:
		return p.frameMax
	case frameThrew:
		return 1 + maxNameBytes + maxErrorTextBytes
	case frameMemory:
		return 1
	case frameFile:
		return p.files.frameBound() // files.go
	case frameEntry:
		return 1 + maxNameBytes + 1
	}
	return -1
}

// errBadFrame is a frame the runner never writes: an unknown kind, a
// length past its kind's bound, or a payload that does not parse.
var errBadFrame = errors.New("python: a malformed frame")

// readFrame reads one frame. The length is checked against the kind's
// bound before anything is buffered; a stream that ends inside a frame
// is io.ErrUnexpectedEOF (the process ended mid-write).
func (p *proc) readFrame(r *bufio.Reader) (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := int64(binary.BigEndian.Uint32(head[1:]))
	if bound := p.frameBound(head[0]); n > bound {
		if head[0] == frameFile {
			return 0, nil, errFilesPast
		}
		return 0, nil, errBadFrame
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return head[0], payload, nil
}

// endingKind is how the frames say the run ended.
type endingKind int

const (
	endNone    endingKind = iota + 1 // the stream ended without an ending frame
	endValue                         // a V frame
	endThrew                         // a T frame
	endBroken                        // a frame the runner never writes
	endRequest                       // an M frame before the start frame
	endFiles                         // output files past the request's bounds (files.go)
)

// ending is the frames' account of how the run ended: the script's own
// (its value or its thrown error), except endRequest, which only the
// runner can send (before the script starts).
type ending struct {
	kind          endingKind
	value         json.RawMessage
	name, message string
	input         bool       // endRequest: the input, not the script, did not fit
	files         []spi.File // endValue: the output files, in name order
}

// needsExit reports whether the outcome waits for the host to observe the
// process's end: a stream that ended without an account, and a
// MemoryError, which the host's observation must confirm.
func (e ending) needsExit() bool {
	return e.kind == endNone || (e.kind == endThrew && e.name == "MemoryError")
}

// session reads the runner's frames until the one that ends the run and
// sends its account on p.ended. It numbers the host calls in the order
// read; their answers carry the host's number.
func (p *proc) session(ctx context.Context, req spi.Request) {
	r := bufio.NewReaderSize(p.out, 64<<10)
	p.files = newOutFiles(req.Limits, func(line string) { req.Log(spi.LevelWarn, spi.StreamStderr, line) }) // files.go
	var calls uint64
	started := false
	end := func(e ending) { p.ended <- e }
	for {
		// The answers waiting for the runner count against what the
		// process could hold: past that, nothing more is read until
		// the runner reads them.
		if !p.answers.waitRoom() {
			end(ending{kind: endNone})
			return
		}
		kind, payload, err := p.readFrame(r)
		switch {
		case errors.Is(err, errBadFrame):
			end(ending{kind: endBroken})
			return
		case errors.Is(err, errFilesPast) && started:
			end(ending{kind: endFiles})
			return
		case errors.Is(err, errFilesPast):
			// Output files follow the script: before the start frame
			// the runner writes none.
			end(ending{kind: endBroken})
			return
		case err != nil:
			end(ending{kind: endNone})
			return
		}
		if !started && kind != frameStart && kind != frameMemory {
			end(ending{kind: endBroken})
			return
		}
		switch kind {
		case frameStart:
			if !started {
				started = true
				close(p.started)
			}
		case frameMemory:
			if started || len(payload) != 1 || (payload[0] != 's' && payload[0] != 'i') {
				// Only the runner, before the script, reports this.
				end(ending{kind: endBroken})
				return
			}
			end(ending{kind: endRequest, input: payload[0] == 'i'})
			return
		case frameLog:
			level, stream := logLevel(payload), logStream(payload)
			if level == 0 || stream == 0 {
				end(ending{kind: endBroken})
				return
			}
			req.Log(level, stream, string(payload[2:]))
		case frameCall:
			name, args, ok := splitNamed(payload)
			if !ok || !json.Valid(args) {
				end(ending{kind: endBroken})
				return
			}
			if ctx.Err() != nil {
				// The run has ended (or its context is done, which
				// Evaluate reports): the broker is not called again.
				return
			}
			p.hostCall(ctx, req, calls, name, args)
			calls++
		case frameValue:
			if !json.Valid(payload) {
				end(ending{kind: endBroken})
				return
			}
			end(ending{kind: endValue, value: payload, files: p.files.sorted()})
			return
		case frameFile, frameEntry:
			if e := p.files.add(kind, payload); e != nil { // files.go
				end(*e)
				return
			}
		case frameThrew:
			name, msg, ok := splitNamed(payload)
			if !ok || name == "" {
				end(ending{kind: endBroken})
				return
			}
			end(ending{kind: endThrew, name: name, message: string(msg)})
			return
		default:
			end(ending{kind: endBroken})
			return
		}
	}
}

// splitNamed splits a payload that starts with a name: its length in one
// byte, the name, the rest.
func splitNamed(payload []byte) (string, []byte, bool) {
	if len(payload) < 1 || len(payload) < 1+int(payload[0]) {
		return "", nil, false
	}
	n := int(payload[0])
	return string(payload[1 : 1+n]), payload[1+n:], true
}

// cpuSlack: the CPU time read from the resource usage is taken as the
// CPU limit from budget - budget/cpuSlack on. The usage the kernel
// reports for a process it ended at its RLIMIT_CPU reads up to a tenth
// below the limit here (0.91 s for 1 s), and a process that ends itself
// that close to its budget has gained nothing by it.
const cpuSlack = 4

// observation is what the host saw of the run from outside the sandbox.
type observation struct {
	exited bool
	// exitCode is bubblewrap's exit code (the interpreter's, or 128 plus
	// the signal that ended it); -1 when a signal ended bubblewrap.
	exitCode int
	// cpu is the interpreter's CPU time (user and system), from the
	// resource usage the kernel reports when bubblewrap, which waits for
	// it, is waited for.
	cpu time.Duration
	// maxRSS is the interpreter's peak resident memory, from the same.
	maxRSS int64
	// memoryLimited: an address-space limit (RLIMIT_AS) held the run.
	memoryLimited bool
	// oomKilled: the kernel killed the run for its cgroup's memory limit,
	// read from the group's events (cgroup.go).
	oomKilled bool
	// stderr is the head of what bubblewrap (and the process) wrote to
	// stderr, quoted only for bubblewrap's own failure before the start.
	stderr []byte
	// started: the start frame arrived (the runner, before the script).
	started bool
}

// observe reads the exited process's state. It must be called once
// p.waited and p.errDone are closed.
func (p *proc) observe(limits spi.Limits) observation {
	o := observation{
		exited: true, exitCode: -1, stderr: p.stderr.Bytes(),
		memoryLimited: p.b.addressSpace(limits) > 0,
		oomKilled:     p.oomKilled(), // cgroup.go
	}
	select {
	case <-p.started:
		o.started = true
	default:
	}
	if p.zr != nil {
		p.observeReport(&o) // zygote.go
		return o
	}
	st := p.cmd.ProcessState
	if st == nil {
		o.exited = false
		return o
	}
	o.exitCode = st.ExitCode()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		o.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		o.maxRSS = ru.Maxrss << 10
	}
	return o
}

// conclude decides a run's outcome from the frames' account and the
// host's observation. The account is believed only for what the script
// itself may say (its value, its thrown error), and for what the runner
// said before the script started; every limit is the host's finding.
func (b *Backend) conclude(e ending, o observation) spi.Outcome {
	switch e.kind {
	case endValue:
		out := spi.OK(json.RawMessage(e.value))
		out.Files = e.files
		return out
	case endFiles:
		return spi.Limited(spi.LimitFiles)
	case endRequest:
		if e.input {
			return spi.InputTooLarge()
		}
		return spi.Limited(spi.LimitMemory)
	case endBroken:
		return spi.Threw("Error", "python: the script wrote to the runner's channel")
	case endThrew:
		if e.name == "MemoryError" && (o.memoryLimited || o.oomKilled) {
			// With only rlimits, what the host sees of a refused
			// allocation is that the address-space limit held the run:
			// the kernel refused the request inside the process, and
			// nothing outside records it (docs/RATIONALE.md, R27).
			return spi.Limited(spi.LimitMemory)
		}
		return spi.Threw(e.name, e.message)
	}
	// The stream ended without an account: what the host saw decides.
	switch {
	case !o.exited:
		return spi.Infrastructure("python: the sandbox ended without a state")
	case o.oomKilled && !o.started:
		// The request did not fit in the group before the script ran.
		return spi.InputTooLarge()
	case o.oomKilled:
		return spi.Limited(spi.LimitMemory)
	case o.cpu >= b.cpu-b.cpu/cpuSlack:
		return spi.Limited(spi.LimitCPU)
	case !o.started && o.exitCode == 1:
		// bubblewrap's own failure (it exits 1 with its reason).
		return spi.Infrastructure("python: the sandbox did not start: " + firstLine(o.stderr))
	case !o.started:
		return spi.Infrastructure(fmt.Sprintf("python: the interpreter ended before the script started (exit code %d)", o.exitCode))
	case o.exitCode > 128:
		return spi.Threw("InternalError", fmt.Sprintf("python: the interpreter ended with signal %d on this script", o.exitCode-128))
	default:
		return spi.Threw("SystemExit", "python: the script ended the interpreter without a result")
	}
}

func logLevel(payload []byte) spi.LogLevel {
	if len(payload) < 2 {
		return 0
	}
	switch payload[0] {
	case 'd':
		return spi.LevelDebug
	case 'i':
		return spi.LevelInfo
	case 'w':
		return spi.LevelWarn
	case 'e':
		return spi.LevelError
	}
	return 0
}

func logStream(payload []byte) spi.LogStream {
	if len(payload) < 2 {
		return 0
	}
	switch payload[1] {
	case 'o':
		return spi.StreamStdout
	case 'e':
		return spi.StreamStderr
	}
	return 0
}

// errNoHost answers the host calls of a run that has no host functions.
var errNoHost = errors.New("python: this run has no host functions")

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
