// Package park keeps the parked instances of the wasm guest engines
// that run in parked mode (backends/quickjs and backends/starlarkwasm):
// a [Pool] per key of what an instance is booted with, at most a bounded
// number of keys ([Pools]), refilled in the background off the request
// path.
//
// The pool knows an instance only by its [Seat]: whether a background
// boot is still under way, and whether a run holds it. It bounds what it
// keeps — idle instances, instances booting for it and instances out on
// a run that may come back never exceed its size — and never how many
// runs go at once: a run that finds nothing idle or booting boots an
// instance of its own, which the pool takes back only while it has room.
//
// An instance's life is its [Core], which the engine's instance embeds:
// the goroutine that never leaves the guest's call of _start, the park
// point, the restore before every run, and the host functions that drive
// them ([WASI]'s fd_read and proc_exit). The engine says only what its
// guest needs ([Guest]): how to instantiate and boot it, what to save at
// the park point and put back before a run, and what a run left behind.
// [Mode] is the choice between parked instances and a new instance per
// run.
//
// Application code never uses this package.
package park
