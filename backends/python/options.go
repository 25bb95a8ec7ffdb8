package python

import "time"

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
	// Packages names packages of the interpreter's system site
	// directories (Debian's dist-packages: python3-numpy, python3-pandas,
	// python3-matplotlib) by their import names ("numpy", "pandas",
	// "matplotlib"). Each, with the dependencies its import loads or
	// opens (found when the machine is checked, by importing them on the
	// host), is bound read-only and imported once by the zygote, so that
	// a run's import costs nothing; any other package is
	// ModuleNotFoundError. At most MaxPackages (CheckPackages). Empty
	// means none. See the package doc,
	// "Packages".
	Packages []string
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
	// [Backend.ZygoteStatus] reports.
	NoZygote bool
	// CacheDir is the directory where the backend keeps what it found of
	// the machine (the probe of the interpreter, and which of its
	// self-tests passed), so that a new process neither probes nor runs
	// the self-test again: it must be a directory only its owner, the
	// current user, can write. Empty means the default,
	// $SANDBANK_CACHE_DIR or os.UserCacheDir()/sandbank, used when it
	// passes the same checks (otherwise every process checks the
	// machine). An entry names bubblewrap's and the interpreter's paths
	// and files (size, modification time, inode), the packages
	// directory, the user, the kernel's release and this build's sandbox
	// programs: any of them changed, the machine is checked again; a
	// missing or damaged entry is the same.
	CacheDir string
	// NoCache keeps nothing on disk: each process checks the machine
	// once. It cannot be used with CacheDir.
	NoCache bool
}

// The defaults.
const (
	DefaultCPUTime          = 30 * time.Second
	DefaultScratchBytes     = 16 << 20
	DefaultMaxResultBytes   = 64 << 20
	DefaultStartupAllowance = 10 * time.Second
)
