// Package builtin registers the backends that ship with Sandbank, for
// programs that offer all of them by name, such as the sandbank command
// line. Most code does not need it: build the one backend it uses with that
// backend's New and hand it to effect.New.
//
// Registration is explicit. No backend package registers itself in an init
// function; a program that wants the built-in engines calls [Register] on a
// registry it owns:
//
//	var r registry.Registry
//	builtin.Register(&r)
//	entry, err := r.Default("javascript") // quickjs
//
// Register builds no backend, so listing the engines is cheap: each entry's
// capabilities are its backend package's own declaration (the package's
// Declare function, which the backend's Capabilities method returns too),
// never a copy written here, and an entry's factory builds its backend
// when a caller first needs one. [Fixtures] returns the conformance fixture set of each
// built-in language, and [CPUBudgetFactory] a small-budget factory for the
// engines that have a CPU budget option, so that a conformance run (the
// command line's "sandbank matrix") can prove every declaration.
//
// # Security considerations
//
// A registry entry's capabilities drive engine selection only; the effect
// snapshots the backend's own declaration again when it is built and
// applies its refusals to that.
package builtin
