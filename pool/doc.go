// Package pool is the product layer every door of Sandbank holds (the HTTP
// server, the MCP server, the Temporal worker and the command line): what
// database/sql.DB is to drivers, a [Pool] is to the engines of a
// [registry.Registry].
//
// A Pool builds an engine's backend and its [effect.Effect] once, on first
// use, and shares it: it is safe for concurrent use. A build that fails (a
// factory that errs or panics) is an error of that use, and the next use
// tries again. [Pool.Warm] builds and warms engines ahead of their first
// run; [Pool.Close] closes every effect built, once, and later uses fail
// with an error matching [effect.ErrClosed].
//
// The policies the doors share are written here once:
//
//   - [Pool.Resolve] chooses a request's engine from an engine name, a
//     language, and the engines the caller may use;
//   - [Clamp] checks a request's limits against a ceiling, which [Lower]
//     lowers by a tenant's own;
//   - [Pool.Describe] describes the engines, and each door renders the
//     [Description] in its own wire format.
//   - [Pool.Effect] with a caller's packages (a tenant's) is the engine
//     built with exactly them, one per distinct set, at most
//     [MaxPackageSets] sets ([Options.Packages]).
//
// Every refusal is an invalid call (it matches [effect.ErrInvalidCall]),
// so each door answers it through its own table from [effect.KindOf].
package pool
