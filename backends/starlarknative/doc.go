// Package starlarknative is the Starlark engine with a hard memory cap
// and a hard clock at native speed: the starlark-wasm guest
// (backends/starlarkwasm/guest, the project's in-process Starlark engine
// backends/starlark around go.starlark.net) built natively for Linux,
// embedded per architecture (linux/amd64, linux/arm64), and run as a
// confined child process per run, executed from a sealed memfd (nothing
// is written to disk). It registers as the engine "starlark-native", the
// default of the language starlark where it is available; the script
// contract, the value conversion, the step budget, the guest protocol,
// the reading of a run's facts (internal/starlarkguest) and the fixtures
// are starlark-wasm's, because the child runs that very code.
//
//	b, err := starlarknative.New(nil)
//	…
//	e, err := effect.New(scripts, b, nil)
//
// Declared capabilities: Network none, WallClock hard (the host kills
// the child when the script's clock, armed by its start record, runs
// out), Memory only where each run gets its own cgroup ([KernelBounds]),
// CPU true (the step budget, Options.MaxSteps), FreshPerRun true,
// HostCalls true and Logs true.
//
// # Confinement
//
// A child is started in new pid, mount, ipc, uts and network namespaces,
// as nobody when the host is root, else in a user namespace of its own
// whose root is the host's user, killed if the host dies, and confines
// itself before it reads any
// byte of a run: every inherited descriptor past stdio closed, rlimits
// (no core, no file, few descriptors), no capabilities and no new
// privileges, Landlock with no filesystem and no network access (best
// effort: where the kernel lacks it, the rest holds), and a seccomp
// allow-list of the Go runtime's calls, with which no file can be opened,
// no socket made, no process started. Then it writes one byte and
// waits. Options.Spares such children wait ready off the request path
// (they know nothing of any run), so a run pays no process start.
//
// # Memory
//
// Where the host may create cgroups (internal/cgroup: as root, or in a
// delegated subtree), each run's child is moved into a group of its own
// before it reads its arguments, bounded at the run's memory limit and a
// small overhead; the kernel's OOM kill there is limitExceeded memory
// (inputTooLarge before the script started). The child's Go runtime
// also gets a soft limit under the run's limit and RLIMIT_AS as
// backstops. Without a group the backend does not declare the memory
// limit.
//
// # Outcomes
//
// The host decides every outcome from what it observes: its own timers
// (the script's wall clock and the cold-start allowance, which kill the
// child), the child's exit status, the group's memory events, and, of
// what the child wrote, the nonce-framed records of the guest protocol
// (internal/wasm/guest), bounded before they are kept.
//
// # Notes
//
// Elsewhere (another OS or architecture, no user namespaces) [Available]
// says why the engine cannot run, and starlark-wasm stays the default.
// Figures: docs/performance.md; the decision: docs/design.md.
package starlarknative
