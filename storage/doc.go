// Package storage is what a door of Sandbank keeps: callers' scripts, by
// content address, the receipts of the runs it answered and the runs
// suspended, by run id.
// Every door (the HTTP server, the MCP server, the Temporal worker, the
// command line) takes its stores from here, behind three interfaces:
//
//   - ScriptStore: MemoryStore (bounded, least recently used evicted) and
//     DirStore (a directory, written atomically, checked on every read);
//   - ReceiptStore: MemoryReceipts and ReceiptLog (an append-only log of
//     framed, checksummed records, each synced before Append returns,
//     rotated by size);
//   - ContinuationStore: MemoryContinuations and DirContinuations (one
//     file per run, written atomically), the suspended durable runs a door
//     keeps until they are resumed, each claimed by one resumption.
//
// OpenData keeps them for every tenant of a server, in memory or in a
// data directory: it takes the directory's lock (one process per
// directory), and reads everything stored back and checks it; nothing
// that fails a check is served. docs/data-dir.md has the layout, the
// formats and the promises.
//
// Each constructor takes an options struct pointer; nil means defaults,
// and a negative bound is refused with an error matching
// effect.ErrInvalidLimits.
package storage
