package quickjs

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/runfiles"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/spi"
)

// job is what the guest sees of one run, in either mode: the request
// payload it reads from stdin, the stack canary, and the run's own stdout
// and stderr. In parked mode it is also the hand-off between the run's
// goroutine and the instance's (the fields below mu).
type job struct {
	r       *run
	payload []byte
	stdin   io.Reader // the payload, then host-call replies (wasmguest.Stdin)
	canary  *jsguest.Canary
	stdout  *wasmguest.Stdout
	stdoutW io.Writer // stdout, seen first by the beforeWrite test hook
	stderr  *wasmguest.Capped
	stderrW io.Writer     // stderr, with the script's log records taken out (jsguest.Stderr)
	memPeak int64         // the memory size the guest saw when the run ended
	files   *runfiles.Set // the run's files, which stdin serves

	inputRead atomic.Bool

	// Parked mode's hand-off.
	mu       sync.Mutex
	inst     *instance
	stopped  bool
	finished bool

	done      chan struct{} // closed when facts (or err) are set
	delivered bool          // touched only by the instance goroutine
	facts     jsguest.Facts
	err       error
}

// newJob prepares the guest's side of run r for req.
func (r *run) newJob(req spi.Request) (*job, error) {
	nonce, err := wasmguest.NewNonce()
	if err != nil {
		return nil, err
	}
	canary, err := jsguest.NewCanary()
	if err != nil {
		return nil, err
	}
	stdout := r.NewStdout(nonce, jsguest.StdoutLimit(r.Limits.MemoryBytes))
	stderr := wasmguest.NewCapped(r.b.set.MaxStderrBytes)
	return &job{
		r:       r,
		payload: jsguest.Payload(nonce, req.Script, req.Input, req.Host != nil),
		canary:  canary,
		stdout:  stdout,
		stdoutW: r.stdoutWriter(stdout),
		stderr:  stderr,
		stderrW: wasmguest.NewStderr(nonce, req.Logs, stderr),
		files:   runfiles.New(req),
		done:    make(chan struct{}),
	}, nil
}

// factsFrom reads what the run of j left behind in memory and in its
// sinks; mem is the allocator of the run's linear memory.
func (j *job) factsFrom(memory api.Memory, bottom uint32, mem *wasmhost.Allocator) jsguest.Facts {
	back, ok := memory.Read(bottom, jsguest.CanarySize)
	// A fresh memory never shrinks: its size now is the run's high-water
	// mark. Parked mode replaces it with the guest-visible size (growth.go).
	j.memPeak = int64(memory.Size())
	return jsguest.Facts{
		Record:        j.stdout.Record(),
		InputRead:     j.inputRead.Load(),
		Started:       j.stdout.Started(),
		CanaryIntact:  ok && j.canary.Intact(back),
		MemoryRefused: mem.Refused(),
	}
}

// attach binds j to the instance that runs it; a job stopped before
// that kills the instance at once.
func (j *job) attach(inst *instance, cause func() error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.inst = inst
	if j.stopped {
		inst.Kill(cause())
	}
}

// stop kills the job's instance, unless the run already finished.
func (j *job) stop(cause error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.finished || j.stopped {
		return
	}
	j.stopped = true
	if j.inst != nil {
		j.inst.Kill(cause)
	}
}

// finish marks the run finished and reports whether it had been stopped.
func (j *job) finish() (stopped bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.finished = true
	return j.stopped
}
