// Package registry maps engine names and languages to backend factories, so
// that an application can choose a sandbox engine per flow: by name
// ("quickjs"), as the default engine of a language ("javascript"), or by the
// capabilities the flow requires (a hard wall clock, an enforced memory
// limit, a fresh environment per run).
//
// It is for applications that offer several engines and pick one per flow,
// and for the sandbank command line, which lists and runs the registered
// engines. Backend packages are not required to register anywhere: the
// registry-free path always exists and is what most code needs. Build a
// backend with its package's New and hand it to
// github.com/sandbank/sandbank/effect.New:
//
//	backend, err := quickjs.New(nil)
//	...
//	eff, err := effect.New(store, backend, nil)
//
// An [Entry] carries an engine's declared [spi.Capabilities] so that
// [Registry.Select] can choose without constructing a backend. The effect
// still reads the backend's own declaration at construction and refuses what
// it cannot vouch for; the registry's copy is used for selection only.
//
// # Registration
//
// As with database/sql, registration is a program-construction step:
// [Registry.Register] panics on a programmer error (an empty name or language, a nil
// factory, invalid capabilities, a language that disagrees with the
// capabilities, or a duplicate engine name). Lookups that fail return an
// error listing what is registered, so a forgotten registration is obvious.
//
// A [Registry]'s zero value is ready to use and safe for concurrent use.
// There is no package-level registry and no exported mutable state: a
// program owns its registry and fills it explicitly (package builtin
// registers the shipped engines into one), so what a program can run is
// visible where the registry is made.
//
// # Security considerations
//
// Selection trusts each entry's declared capabilities, and a declaration is
// only as good as the conformance run that proves it (package conformance).
// The effect never sees the entry: it snapshots the backend's own
// declaration and applies its refusals (network access, reused
// environments) to that, so a wrong entry can mislead selection but cannot
// weaken the effect. Select never returns an engine that falls short of the
// requirements on any axis it checks; a flow that runs untrusted,
// model-written code should require at least Network none and FreshPerRun.
package registry
