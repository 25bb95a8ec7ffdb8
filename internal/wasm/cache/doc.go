// Package cache is the sealed on-disk cache of the wasm engines: the
// rewritten guest modules (internal/wasm/rewrite's output) and their
// compiled machine code, kept across processes so that a warm process
// neither rewrites nor compiles.
//
// A compiled module read from the cache is run as machine code, so every
// entry is sealed, and a damaged entry costs a recompile, never a failure
// or a crash:
//
//   - [Read] and [Write] keep a blob (a rewritten module, wasmtime's
//     serialized code) with its SHA-256 after it; Read returns a blob
//     only when the sum matches, and removes it otherwise.
//   - wazero writes its own entries ([Wazero]); each is sealed with a
//     sidecar file holding its SHA-256, checked before wazero may read
//     the directory (an entry whose seal is missing or wrong is removed)
//     and written once a compile has added an entry. Each module has a
//     directory of its own, so opening one checks only its entries.
//
// Entries are written atomically (a temporary file renamed over the
// entry), so concurrent processes see a whole entry or none. Removing an
// entry is always safe: the worst case is one more compile.
//
// A directory is used only when it is a directory its owner, the current
// user, alone can write ([Prepare]). [Resolve] is the one policy of every
// backend's CacheDir and NoCache options: a directory asked for must be
// usable; the default, $SANDBANK_CACHE_DIR or os.UserCacheDir()/sandbank
// ([DefaultDir]), is used when it is, and otherwise the backend compiles
// in memory, which costs only time.
package cache
