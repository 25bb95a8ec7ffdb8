//go:build linux

package python

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandbank/sandbank/spi"
)

//go:embed runner.py
var runnerSource string

// Options configure the backend. The zero value (or a nil *Options) means
// defaults.
type Options struct {
	// Python is the interpreter: a path, or a name looked up in PATH. The
	// backend runs the executable it reports as sys.executable, so a
	// launcher (a pyenv shim) is fine. Empty means /usr/bin/python3 when it
	// exists, else python3 in PATH. It must be CPython 3.10 or later.
	Python string
	// Bubblewrap is the bwrap executable that builds the sandbox: a path,
	// or a name looked up in PATH. Empty means "bwrap".
	Bubblewrap string
	// SitePackages is one directory of allow-listed packages (a
	// virtualenv's site-packages) bound read-only and put on sys.path.
	// Empty means none: the standard library only.
	SitePackages string
	// CPUTime is the CPU budget of one run, interpreter start-up
	// included: a profiling timer (ITIMER_PROF, whose handler ends the
	// process) at this budget, and RLIMIT_CPU at the budget rounded up to
	// a whole second as the bound a script cannot lift. The host reports
	// the CPU limit from the CPU time it reads when the process ends (at
	// three quarters of the budget or more: see docs/RATIONALE.md, R27).
	// Zero means DefaultCPUTime; negative is refused.
	CPUTime time.Duration
	// ScratchBytes is the size of the run's private, writable /tmp (a
	// tmpfs), and the largest file a script may write (RLIMIT_FSIZE).
	// Zero means DefaultScratchBytes; negative means no writable
	// directory at all.
	ScratchBytes int64
	// MaxResultBytes bounds the result as JSON text. Zero means
	// DefaultMaxResultBytes; negative is refused. The effect's
	// MaxOutputBytes is the bound callers rely on; keep this one above it.
	MaxResultBytes int64
	// StartupAllowance is how long a run may take to start (the sandbox
	// and the interpreter, reading the input) before it is reported as an
	// spi.StartupError. Zero means DefaultStartupAllowance.
	StartupAllowance time.Duration
	// Seed seeds random and os.urandom in every run. Zero is a valid seed
	// (and the default).
	Seed int64
	// NoZygote makes every run start a sandbox of its own (bubblewrap and
	// a new interpreter, 50 ms or more), as the backend did before the
	// zygote. False (the default) means runs are forked from the
	// backend's zygote (zygote.go) where the machine allows one, which
	// [ZygoteStatus] reports.
	NoZygote bool
}

// The defaults.
const (
	DefaultCPUTime          = 30 * time.Second
	DefaultScratchBytes     = 16 << 20
	DefaultMaxResultBytes   = 64 << 20
	DefaultStartupAllowance = 10 * time.Second
)

// Sandbox bounds that are not options.
const (
	// maxOpenFiles is RLIMIT_NOFILE.
	maxOpenFiles = 64
	// maxThreads is RLIMIT_NPROC. The seccomp filter refuses every new
	// process; this bounds threads (the kernel does not apply it to a
	// sandbox started by root, which the filter still holds).
	maxThreads = 16
	// sandboxUID is the user and group a script runs as.
	sandboxUID = "65534"
)

// Backend runs each script in a new CPython process inside a bubblewrap
// sandbox: a fork of its zygote, or a sandbox of its own. Build one with
// [New], use it from any number of goroutines, and Close it to end its
// zygote.
type Backend struct {
	bwrap     string
	lay       *layout
	filter    []byte
	cpuSecs   int64         // RLIMIT_CPU: the budget rounded up to a second
	cpu       time.Duration // the budget (ITIMER_PROF)
	scratch   int64
	maxResult int64
	startup   time.Duration
	seed      int64
	// noGroups: runs get no cgroup even where the host may create one
	// (tests, to see what the group bounds; cgroup.go).
	noGroups bool
	// noLandlock: runs do not confine themselves with Landlock (tests, to
	// see what it refuses; landlock.go).
	noLandlock bool
	// tag is in every run's command line (the runner's argument), so
	// that tests can find this backend's processes.
	tag string
	// useZygote: runs are forked from the zygote (zygote.go) while the
	// machine allows one.
	useZygote bool
	zygotes   *zygotes
}

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// New checks the machine and returns a backend. It refuses, naming what is
// missing, when the interpreter or bubblewrap is absent or too old, or when
// the kernel refuses a part of the sandbox (user, pid, network, mount, ipc
// or uts namespaces, seccomp): it runs one script in the sandbox to see.
// The probe of the interpreter and that script run once per process for
// each Bubblewrap, Python and SitePackages: a later New with the same
// ones reuses what the first one found.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.CPUTime < 0:
		return nil, fmt.Errorf("python: CPUTime is %v, want > 0 (or 0 for the default)", o.CPUTime)
	case o.MaxResultBytes < 0:
		return nil, fmt.Errorf("python: MaxResultBytes is %d, want > 0 (or 0 for the default)", o.MaxResultBytes)
	case o.StartupAllowance < 0:
		return nil, fmt.Errorf("python: StartupAllowance is %v, want > 0 (or 0 for the default)", o.StartupAllowance)
	}
	if o.CPUTime == 0 {
		o.CPUTime = DefaultCPUTime
	}
	b := &Backend{
		cpu:       o.CPUTime,
		cpuSecs:   int64((o.CPUTime + time.Second - 1) / time.Second),
		scratch:   o.ScratchBytes,
		maxResult: o.MaxResultBytes,
		startup:   o.StartupAllowance,
		seed:      o.Seed,
		tag:       newTag(),
		zygotes:   &zygotes{maxRuns: zygoteRuns},
	}
	if b.scratch == 0 {
		b.scratch = DefaultScratchBytes
	}
	if b.maxResult == 0 {
		b.maxResult = DefaultMaxResultBytes
	}
	if b.startup == 0 {
		b.startup = DefaultStartupAllowance
	}
	bwrap, python, err := tools(o)
	if err != nil {
		return nil, err
	}
	b.bwrap = bwrap
	if b.filter, err = filterProgram(); err != nil {
		return nil, err
	}
	if b.lay, err = b.checkMachine(python, o.SitePackages, !o.NoZygote); err != nil {
		b.zygotes.close()
		return nil, err
	}
	if !o.NoZygote {
		b.useZygote = true
		// A backend dropped without Close ends its zygote when collected.
		runtime.AddCleanup(b, (*zygotes).close, b.zygotes)
	}
	return b, nil
}

// machineKey names what New checks of the machine: bubblewrap, the
// interpreter and the packages directory, as the options give them.
type machineKey struct{ bwrap, python, sitePackages string }

// machineCheck is one key's check: the layout, once the probe and a
// self-test have passed with it; whether the zygote passed its
// self-test (zygote.go), and whether a sandbox of a run's own did.
type machineCheck struct {
	mu            sync.Mutex
	lay           *layout
	zygoteChecked bool
	zygoteErr     error // why runs cannot be forked from a zygote here
	sandboxOK     bool
}

// machines holds the checks of this process, by key (*machineCheck).
var machines sync.Map

// machineRuns counts the probes and self-tests this process has run.
var machineRuns atomic.Int64

// checkMachine probes the interpreter and runs the self-test, once per
// process for each bubblewrap, interpreter and packages directory: a
// check that passed is not run again (one that failed is, next time).
// With zygote, the self-test runs on a zygote first (which b then keeps),
// and on a sandbox of its own only where the zygote fails it.
func (b *Backend) checkMachine(python, sitePackages string, zygote bool) (*layout, error) {
	v, _ := machines.LoadOrStore(machineKey{b.bwrap, python, sitePackages}, &machineCheck{})
	c := v.(*machineCheck)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lay != nil {
		lay := *c.lay // each backend its own
		b.lay = &lay
	} else {
		machineRuns.Add(1)
		p, err := probeInterpreter(python)
		if err != nil {
			return nil, err
		}
		if b.lay, err = newLayout(p, sitePackages); err != nil {
			return nil, err
		}
	}
	if zygote {
		if !c.zygoteChecked {
			machineRuns.Add(1)
			c.zygoteChecked = true
			c.zygoteErr = b.zygoteSelfTest() // zygote.go
		}
		b.zygotes.refused = c.zygoteErr
		if c.zygoteErr == nil {
			return b.keepLayout(c), nil
		}
	}
	if !c.sandboxOK {
		machineRuns.Add(1)
		if err := b.selfTest(); err != nil {
			return nil, err
		}
		c.sandboxOK = true
	}
	return b.keepLayout(c), nil
}

// keepLayout stores b's layout as the key's, once a self-test has passed
// with it.
func (b *Backend) keepLayout(c *machineCheck) *layout {
	if c.lay == nil {
		lay := *b.lay
		c.lay = &lay
	}
	return b.lay
}

// tools finds bubblewrap and the interpreter.
func tools(o Options) (bwrap, python string, err error) {
	bwrap, err = exec.LookPath(cmpOr(o.Bubblewrap, "bwrap"))
	if err != nil {
		return "", "", fmt.Errorf("python: bubblewrap (bwrap) is not installed: the sandbox needs it (Debian: apt-get install bubblewrap)")
	}
	python = o.Python
	if python == "" {
		python = "/usr/bin/python3"
		if _, err := os.Stat(python); err != nil {
			python = "python3"
		}
	}
	if python, err = exec.LookPath(python); err != nil {
		return "", "", fmt.Errorf("python: no Python interpreter %q found", cmpOr(o.Python, "python3"))
	}
	return bwrap, python, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// selfTestTimeout bounds New's run of one script in the sandbox.
const selfTestTimeout = 30 * time.Second

// selfTest runs one script in the sandbox: the kernel refuses a
// namespace or the filter there, if anywhere.
func (b *Backend) selfTest() error {
	ctx, cancel := context.WithTimeout(context.Background(), selfTestTimeout)
	defer cancel()
	out, err := b.Evaluate(ctx, spi.Request{
		Script: []byte("import os\n[os.getuid(), sorted(os.listdir('/')), 6 * 7]"),
		Input:  json.RawMessage(`null`),
		Limits: spi.Limits{WallClock: selfTestTimeout, MemoryBytes: 64 << 20},
	})
	if err != nil {
		return fmt.Errorf("python: the sandbox self-test failed: %w", err)
	}
	want := `[` + sandboxUID + `,["lib","lib64","usr"],42]`
	if out.Kind != spi.KindOK {
		// out.Message is the runner's or bubblewrap's own reason ("python:
		// the sandbox did not start: bwrap: No permissions to create a new
		// namespace…").
		return fmt.Errorf("%s (New runs one script in the sandbox: the kernel must allow user, pid, network, mount, ipc and uts namespaces and a seccomp filter)", strings.TrimSuffix(out.Message, "."))
	}
	if string(out.Value) != want && !b.selfTestRootOK(out.Value) {
		return fmt.Errorf("python: the sandbox self-test answered %.200s", out.Value)
	}
	return nil
}

// selfTestRootOK accepts a root listing other than the usual one (an
// interpreter under /opt, say), as long as the uid is the sandbox's and
// the arithmetic came back.
func (b *Backend) selfTestRootOK(v json.RawMessage) bool {
	var got []json.RawMessage
	if json.Unmarshal(v, &got) != nil || len(got) != 3 {
		return false
	}
	return string(got[0]) == sandboxUID && string(got[2]) == "42"
}

// Version is the interpreter's version ("3.11.2").
func (b *Backend) Version() string { return b.lay.version }

// Warm implements spi.Warmer: it starts the backend's zygote, if it has
// none in service, so that the first run does not wait for it. It
// reports ctx's error, if any.
func (b *Backend) Warm(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.useZygote {
		_, _ = b.zygote()
	}
	return ctx.Err()
}

// Close ends the backend's zygote and every run in flight on it. It is
// idempotent; runs after Close start a sandbox of their own.
func (b *Backend) Close() error {
	b.closeZygotes()
	return nil
}

// errNoOutcome is wrapped by the errors a run returns when the sandbox
// could not be started.
var errNoOutcome = errors.New("python: the sandbox could not be started")

// newTag returns 16 random hex digits.
func newTag() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
