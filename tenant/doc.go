// Package tenant holds the tenants of a Sandbank server: who may call it,
// with which API key, and within which quotas. Both HTTP doors read it:
// the HTTP API (server.Options.Tenants) and 'sandbank mcp --http', which
// admit a request the same way (server.RequireTenant: the key, else 401,
// and the rate, else 429, as problem+json).
//
// A [Set] is read from a JSON document ([Parse], [Load], [FromEnv]) that
// names each tenant, the SHA-256 digests of its API keys, its limits
// ceiling, the engines it may use, the python packages its runs may
// import, its cap on concurrent runs and its rate limit (a token bucket). [Set.Authenticate] maps a presented key to its
// [Tenant]; [Tenant.Allow] and [Tenant.Acquire] apply the quotas.
//
// The document:
//
//	{"tenants": [{
//	  "name": "acme",
//	  "keys": ["sha256:<64 hex digits>"],
//	  "engines": ["goja", "starlark", "python"],
//	  "packages": ["numpy", "pandas"],
//	  "limits": {"wallClock": "2s", "memoryBytes": 33554432},
//	  "maxConcurrentRuns": 4,
//	  "ratePerSecond": 10,
//	  "burst": 20
//	}]}
//
// A tenant's packages are checked as python checks them
// (python.CheckPackages); a document names at most [pool.MaxPackageSets]
// distinct sets, since each is an interpreter of its own. Unknown fields
// are refused, so a misspelt quota is an error rather than
// no quota. [NewKey] makes a key and its digest.
//
// # Security considerations
//
// Keys are hashed at rest: the document holds only their SHA-256 digests,
// so a leaked tenants file does not leak a key. A fast hash is the right
// one here because the keys are not passwords: [NewKey] draws 256 random
// bits, and guessing a preimage of a 256-bit-entropy key from its digest is
// as hard as guessing the key. Slow password hashes (bcrypt, argon2) exist
// to stretch low-entropy secrets; on a server they would make every
// request, including a flood of bad keys, cost tens of milliseconds of CPU.
// Keys shorter than [MinKeyLength] characters are refused by
// [Set.Authenticate] without a lookup.
//
// A presented key is hashed and compared with every stored digest with
// crypto/subtle.ConstantTimeCompare, without stopping at a match, so the
// time taken does not tell which digest (or how much of one) matched.
package tenant
