// Package workloads holds the scripts of Sandbank's user-level benchmark
// ("sandbank bench" and bench/peers), for people who run or extend that
// benchmark: the reshape workload in every language Sandbank runs, and the
// value every translation must return.
//
// reshape builds 10,000 rows, groups them by id % 17, computes each
// group's count, sum and mean, and sorts the groups (sum descending, then
// group). reshape.js is a verbatim copy of the shared benchmark
// (../shared/bench/reshape.js); reshape.star, reshape.py and reshape.wat
// are its Starlark, Python and WebAssembly (Extism plugin) translations.
// All of them return
// the same value, reshape.expected.json, which is the JavaScript result;
// the tests check every translation against it on a real engine.
//
// The echo and runaway workloads are not here: the benchmark uses the
// conformance fixtures of each language (echo, runaway_loop,
// runaway_native), so that it measures the scripts the matrix verifies.
//
// # Security considerations
//
// The scripts are trusted test inputs shipped with Sandbank; nothing here
// reads a file or the network at run time (everything is embedded).
package workloads
