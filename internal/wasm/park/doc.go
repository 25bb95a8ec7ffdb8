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
// Application code never uses this package.
package park
