//go:build linux

package python

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/spi"
)

//go:embed runner.py
var runnerSource string

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
	bwrap        string
	python       string // the interpreter, as found in PATH (machine.go)
	sitePackages string
	packages     []string // Options.Packages, sorted (packages.go)
	cacheDir     string   // where the check's findings are kept, "" for nowhere
	rd           *readiness
	lay          *layout // set by the check (machine.go)
	filter       []byte
	cpuSecs      int64         // RLIMIT_CPU: the budget rounded up to a second
	cpu          time.Duration // the budget (ITIMER_PROF)
	scratch      int64
	maxResult    int64
	startup      time.Duration
	seed         int64
	// noGroups: runs get no cgroup even where the host may create one
	// (tests, to see what the group bounds; cgroup.go).
	noGroups bool
	// noLandlock: runs do not confine themselves with Landlock (tests, to
	// see what it refuses; landlock.go).
	noLandlock bool
	// forceSharedNet: the zygote's runs share its network namespace
	// whatever Landlock can do (tests, to see that a run without its
	// scopes refuses to start; landlock.go).
	forceSharedNet bool
	// tag is in every run's command line (the runner's argument), so
	// that tests can find this backend's processes.
	tag string
	// preload: the modules the zygote imports while idle; nil means
	// zygotePreload (tests: others).
	preload []string
	// useZygote: runs are forked from the zygote (zygote.go) while the
	// machine allows one.
	useZygote bool
	zygotes   *zygotes
}

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// New returns a backend. It refuses, naming what is missing, an invalid
// option and a machine without bubblewrap or the interpreter; it starts
// nothing. The rest of the machine is checked at the first Warm or
// Evaluate, under its context (machine.go): the interpreter is probed
// (it must be CPython 3.10 or later) and one script runs in the sandbox,
// which fails where the kernel refuses a part of it (user, pid, network,
// mount, ipc or uts namespaces, seccomp). The check runs once per
// process for each Bubblewrap, Python and SitePackages, and what it
// found is kept in Options.CacheDir for the next process.
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
		cpu:          o.CPUTime,
		cpuSecs:      int64((o.CPUTime + time.Second - 1) / time.Second),
		scratch:      o.ScratchBytes,
		maxResult:    o.MaxResultBytes,
		startup:      o.StartupAllowance,
		seed:         o.Seed,
		tag:          newTag(),
		rd:           &readiness{sem: make(chan struct{}, 1)},
		sitePackages: o.SitePackages,
		zygotes:      &zygotes{maxRuns: zygoteRuns},
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
	var err error
	if b.packages, err = CheckPackages(o.Packages); err != nil {
		return nil, err
	}
	if len(b.packages) > 0 && b.scratch < 0 {
		return nil, fmt.Errorf("python: Packages need the run's /tmp: ScratchBytes is %d, want ≥ 0", o.ScratchBytes)
	}
	if b.bwrap, b.python, err = tools(o); err != nil {
		return nil, err
	}
	if b.cacheDir, err = cache.Resolve(o.CacheDir, o.NoCache); err != nil {
		return nil, fmt.Errorf("python: %w", err)
	}
	if b.filter, err = filterProgram(); err != nil {
		return nil, err
	}
	if !o.NoZygote {
		b.useZygote = true
		// A backend dropped without Close ends its zygote when collected.
		runtime.AddCleanup(b, (*zygotes).close, b.zygotes)
	}
	return b, nil
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

// Version is the interpreter's version ("3.11.2"), once the machine is
// checked (by Warm, which it runs under ctx when no run has).
func (b *Backend) Version(ctx context.Context) (string, error) {
	if err := b.ready(ctx); err != nil {
		return "", err
	}
	return b.lay.version, nil
}

// Warm implements spi.Warmer: it checks the machine (machine.go), if
// this process has not, and starts the backend's zygote, if it has none
// in service, so that the first run waits for neither. It reports why
// the machine cannot run the sandbox, and ctx's error, if any.
func (b *Backend) Warm(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.ready(ctx); err != nil {
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
