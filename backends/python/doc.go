// Package python is a Sandbank backend that runs Python scripts on the real
// CPython interpreter (the system's python3, 3.10 or later, with its whole
// standard library), one new process per run, in a Linux sandbox: a fork
// of the backend's zygote, or one built by bubblewrap for the run. Applications use it through package effect:
//
//	backend, err := python.New(nil) // fails, saying what is missing, without bubblewrap or python3
//	err = backend.Warm(ctx)          // checks the machine: fails where the kernel refuses the sandbox
//	eff, err := effect.New(store, backend, nil)
//
// # The script contract
//
//   - The input is the global `input`, parsed from JSON (dict, list, str,
//     int of any size, float, bool, None).
//   - The result is the value of the script's last expression statement,
//     as in a notebook cell; a script that ends with another statement
//     returns None. Top-level await works, and a coroutine (any awaitable)
//     left as the last value is awaited on an event loop whose clock is
//     virtual: a wait that nothing can ever end is a scriptError
//     NeverSettles.
//   - The result crosses as JSON: integers past 2^53 and Unicode come back
//     exactly; NaN, infinities, sets, bytes and other values JSON cannot
//     carry are a scriptError TypeError or ValueError.
//   - print and sys.stdout are info lines on stdout; sys.stderr is error
//     lines on stderr; logging (INFO and up by default) keeps its levels.
//   - Host calls are host.NAME(args), and await host.NAME(args) in async
//     code: inside a running event loop the call is issued at once and
//     returns an awaitable, so a script may have several in flight
//     (asyncio.gather), run concurrently up to the effect's
//     MaxConcurrentHostCalls; outside one the call waits for its answer.
//     A failing call raises HostError whose message is the host's text.
//     A host call takes no time on the virtual clock: a timer fires only
//     once no call is in flight.
//   - time, datetime (the pure-Python module), random, os.urandom (and so
//     secrets and uuid4) are deterministic: the clock starts at
//     2000-01-01T00:00:00Z and advances one millisecond per reading,
//     time.sleep advances it without waiting, and randomness is seeded
//     (Options.Seed), an unseeded random.Random() too; uuid1 reads the
//     fake clock and a fixed node.
//   - An uncaught exception is a scriptError with its class name and
//     message, prefixed with the script's line; a SyntaxError too.
//
// # Files
//
// The request's input files are in the working directory (the run's
// /tmp) by name, read-only (mode 0444: open('data.csv')), and out/ is
// there, empty. The output files are the regular files the script
// wrote directly under out/ when it returned its value, collected then
// (a run that throws returns none). They cross as frames, bounded and
// checked by the host like every other (files.go): past
// Limits.MaxOutFiles or MaxOutFileBytes the run is limitExceeded files;
// an entry whose name spi.CheckFileName refuses ("my chart.png",
// ".hidden"), a directory, a symbolic link (never followed) or any
// other kind of file is not an output file: it is left out, the run
// goes on, and a warning line in the run's log says what was left out
// and why (so does out/ itself replaced by a symbolic link); a script
// that removed out/ returns none; an input file named out is the scriptError
// FileExistsError before anything starts. Writing a name again
// replaces its content. The run's /tmp (Options.ScratchBytes) holds the
// input files and what the script writes, so it bounds both: input
// files that cannot fit are inputTooLarge before anything starts. Input
// and output files are charged to the run's memory limit where the run
// has a cgroup.
//
// # Packages
//
// Options.Packages names packages of the interpreter's system site
// directories (Debian's dist-packages: python3-numpy, python3-pandas,
// python3-matplotlib) a script may import. When the machine is checked,
// the probe imports them on the host, outside the sandbox (so the
// packages' own import code runs there as the operator installed it,
// never a script), and records what the imports loaded, opened and
// mapped: those site entries (the packages and their dependencies),
// data files, shared libraries and matplotlib's data directory are
// bound read-only, and nothing else of the site directories, so any
// other package is ModuleNotFoundError. The zygote imports them before
// it prepares its first run: with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS,
// MKL_NUM_THREADS and their kin at 1 (a library that starts a thread
// pool at import would leave the zygote unable to fork safely: the
// probe fails the check of the machine when the process holds more
// than one thread once they are imported), then gc.freeze, so that a
// run's collections do not copy the zygote's pages. A run pays nothing for import pandas. matplotlib runs on Agg
// with a font cache the probe builds from the fonts it ships (no system
// font, so a chart's bytes are the same on every machine with the same
// versions), copied into the zygote's own small /tmp (matplotlib
// refuses a configuration directory it cannot write; each run mounts
// its own /tmp over it). Without a zygote, each run imports the
// packages itself, seconds per run.
//
// What a package may do at its import: anything the operator's
// interpreter does, once, on the host (the probe) and in the zygote,
// before any run exists; never while a script runs. What a run sees of
// it: the modules a package imported that the runner configures (random,
// logging, uuid, asyncio) are configured by each run as it starts, and
// numpy's global generator is seeded with Options.Seed, so np.random,
// random, secrets and numpy's default_rng() are the same in every run.
// time.time() and its kin stay the fake clock; but a package imports
// the C datetime module, whose datetime.now() and date.today() (and
// pandas' Timestamp.now(), numpy's datetime64('now')) read the host's
// clock: with Packages, the date is readable (docs/RATIONALE.md, R94).
//
// # The sandbox
//
// Each backend keeps a zygote (zygote.go, zygote.py): one bubblewrap
// sandbox holding an interpreter with the standard library's common
// modules imported, which forks each run and runs none of a run's code.
// Each run's process is pid 1 of its own pid namespace, with its own
// mount and uts namespaces (the ipc one is the zygote's, empty: the
// filter refuses every System V and message-queue call) and a fresh tmpfs /tmp of
// Options.ScratchBytes (two runs are kept prepared so, off the request
// path), and its own network namespace unless Landlock scopes abstract
// sockets (ABI 6 or later), where the zygote's runs share its empty one; it holds no descriptor but its three pipes and no capability,
// and installs the seccomp filter itself before the runner starts. The
// host reads the run's pid from the kernel (the credentials of the
// message its process sends before the script exists) and its exit
// status and resource usage from the zygote (the run's parent, which
// waits for it and never runs the script). The zygote is replaced after 256
// runs, as soon as one of its runs ends other than with its value, its
// thrown error or the host's own kill (its wall clock, its caller's
// context: the zygote must report it died of that SIGKILL), and when it
// dies; Close ends it. Where the zygote cannot
// be had (bubblewrap may not grant CAP_SYS_ADMIN in the sandbox's user
// namespace, or the kernel refuses a run's namespaces: the self-test
// runs on a zygote first), or with Options.NoZygote, each run is
// `bwrap … python3 -S -s -B -c RUNNER`, the interpreter pid 1 of its
// namespace ([Backend.ZygoteStatus] says which).
//
// Either way a run has: new user (the zygote's), pid, network (a forked
// run where Landlock has ABI 6: the zygote's, which holds no interface
// up and no socket a run can name), mount, ipc (a forked run: the
// zygote's) and uts namespaces (and cgroup where the kernel has it); uid and
// gid 65534 inside, no capabilities, no further user namespaces; a
// read-only root holding only the interpreter, its standard library,
// the shared libraries it maps (found by running it once on the host: the probe) and
// the optional Options.SitePackages; a private tmpfs /tmp of
// Options.ScratchBytes; no /proc, /dev, /etc or home; no network
// interface up; an environment holding only PYTHONHASHSEED=0, cleared
// before the script runs.
//
// Where the host may create cgroups (as root, or inside a delegated
// subtree: [KernelBounds] says), each run has its own, holding the whole
// sandbox from its first instruction (a forked run's process is placed
// in it before it may go on): memory.max (v2) or
// memory.limit_in_bytes (v1) at the memory limit plus the interpreter's
// own start-up (10 MiB; 4 for a forked run), kernel memory counted and no swap, so shared memory,
// memfd files, /tmp's files and inodes and thread stacks are the memory
// limit like the heap; pids.max bounds threads for root too. The host
// reads the group's events once the run has ended: a run the kernel
// killed for its memory is the memory limit (before the script started:
// the input did not fit). The group is removed after the run, anything
// left in it killed. Without a group, the memory limit is an
// address-space rlimit, which kernel-held memory escapes, and the backend
// does not declare it.
//
// The runner (runner.py, embedded) sets rlimits before it reads the
// script: address space (without a group: the memory limit plus the
// interpreter's own start-up mapping, measured by the probe), CPU time
// (Options.CPUTime: a profiling timer whose handler ends the process, and
// RLIMIT_CPU rounded up to a second behind it; the host reads the CPU
// limit from the resource usage the kernel reports, never from how the
// process ended), threads, open files, file size, no core
// dumps. It then confines itself with Landlock (confine.py, embedded):
// read-only everywhere, read-write under /tmp, no exec, no TCP, and
// (ABI 6) no signal or abstract socket outside the run; a kernel with an
// older ABI gets what it knows, one without Landlock nothing. The seccomp
// filter is an allow-list of what CPython and its standard library call,
// the architecture checked (bubblewrap installs it, or the forked run's
// process itself): anything else is ENOSYS; ptrace, mount,
// unshare and setns, bpf, keyctl, perf_event_open, module, reboot and
// clock calls, every new process (fork, vfork, clone without
// CLONE_THREAD) and every socket family but AF_UNIX are EPERM. The
// process group is killed with SIGKILL when the run ends, at the wall
// clock, when ctx is done, and when the host process dies (Pdeathsig, and
// bubblewrap's --die-with-parent); a forked run is killed through a
// pidfd of its process, pid 1 of its namespace, which takes the
// namespace with it.
//
// The declaration (network none, wall clock hard, memory where runs get
// a cgroup, CPU, fresh per run, host calls, logs) holds by construction;
// the conformance kit with fixtures/python, whose escape probes try each
// door above, proves it. New refuses a machine without Linux, bwrap or
// the interpreter. The first Warm or Evaluate checks the rest, under its
// context: the interpreter must be CPython 3.10 or later, and one script
// must run in the sandbox (a kernel that refuses the namespaces or the
// filter fails it); the error says what is missing, and the check runs
// again next time. What a check found is kept in Options.CacheDir (the
// wasm engines' cache directory by default), so a new process runs it
// only when bubblewrap, the interpreter, the user or the kernel changed.
// [Available] checks the cheap part without starting anything; package
// builtin registers the engine only where it passes.
//
// # Security considerations
//
// The isolation is the Linux kernel's: namespaces, seccomp, Landlock,
// cgroups and rlimits, a far larger attack surface than the wasm
// engines' (a kernel bug is an escape). For hostile multi-tenant use,
// run this engine under gVisor or in a VM (docs/RATIONALE.md, R27).
// Without a cgroup, RLIMIT_NPROC does not apply to a sandbox started by
// root; the seccomp filter, which refuses every new process, is what
// stops a fork bomb, and threads are bounded by the address space only.
// The script shares its process with the runner, so everything the
// process writes once the script runs is the script's: the host believes
// only its value, its thrown error, its log lines and its host calls,
// bounds every frame by its kind before buffering it, matches answers to
// calls by its own numbering, and decides every limit from what it
// observes outside (its timers, the exit status, the CPU time wait4
// reports); a malformed frame is a scriptError. With rlimits only, a
// MemoryError is the memory limit when one was set (docs/design.md, "A
// guest that shares a process with the script").
//
// # Notes
//
// A forked run costs a few milliseconds (docs/performance.md); a run
// that starts a sandbox of its own costs bubblewrap and the interpreter,
// 50 ms or more. The zygote is an idle interpreter and two prepared runs
// per backend, for as long as the backend is open. Forked runs share the
// zygote's address-space layout.
package python
