// combine.js prints one table from the JSON of peers.js and of
// "sandbank bench --json", with ratios against Sandbank's "quickjs" engine.
//
//   node combine.js PEERS.json SANDBANK.json...
//
// Several SANDBANK.json files (run.sh writes one per engine, each from a
// process of its own) are read as one run: their engines together, the
// machine of the first, the load average from the first's start to the
// last's end.
//
// A ratio is the engine's figure divided by quickjs's: below 1 the engine
// is faster than Sandbank's quickjs, above 1 slower. Figures come from the
// two files only; nothing is estimated.
"use strict";

const fs = require("fs");

const [peersFile, ...sandbankFiles] = process.argv.slice(2);
if (!peersFile || sandbankFiles.length === 0) {
  process.stderr.write("usage: node combine.js PEERS.json SANDBANK.json...\n");
  process.exit(64);
}
const peers = JSON.parse(fs.readFileSync(peersFile, "utf8"));
const parts = sandbankFiles.map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
const sandbank = {
  runs: parts[0].runs,
  machine: { ...parts[0].machine, load_avg_end: parts[parts.length - 1].machine.load_avg_end },
  engines: parts.flatMap((p) => p.engines),
};
const processes = parts.length > 1 ? `, one process per engine` : "";

const rows = [];
for (const e of sandbank.engines) {
  rows.push({ name: "sandbank " + e.engine, lang: e.language, echo: e.echo, reshape: e.reshape, kill: e.kill,
    native: e.kill_native, cold: e.cold, throughput: e.throughput });
}
for (const e of peers.engines) {
  rows.push({ name: e.engine + " " + e.version, lang: "javascript", echo: e.echo, reshape: e.reshape, kill: e.kill });
}
const base = sandbank.engines.find((e) => e.engine === "quickjs");

const fmt = (x) => (x === undefined || x === null ? "n/a" : x.toFixed(1));
const ratio = (x, b) => (x === undefined || b === undefined || !b ? "n/a" : (x / b).toFixed(2) + "x");
const get = (section, key) => (section && !section.na ? section[key] : undefined);

const header = ["ENGINE", "ECHO p50 µs", "vs quickjs", "ECHO p99 µs", "RESHAPE p50 ms", "vs quickjs", "RESHAPE CPU ms", "vs quickjs", "KILL p50 ms", "KILL max ms",
  "NATIVE KILL max ms", "COLD ms", "COLD+CACHE ms", "RESHAPE/s 1w", "RESHAPE/s Nw", "SCALING"];
const table = [header];
for (const r of rows) {
  const echo = get(r.echo, "p50_us");
  const reshape = get(r.reshape, "p50_ms");
  let reshapeCell = fmt(reshape);
  if (r.reshape && r.reshape.matches_js === false) reshapeCell += " MISMATCH";
  table.push([
    r.name,
    fmt(echo), ratio(echo, get(base && base.echo, "p50_us")),
    fmt(get(r.echo, "p99_us")),
    reshapeCell, ratio(reshape, get(base && base.reshape, "p50_ms")),
    fmt(get(r.reshape, "cpu_p50_ms")), ratio(get(r.reshape, "cpu_p50_ms"), get(base && base.reshape, "cpu_p50_ms")),
    fmt(get(r.kill, "p50_ms")), fmt(get(r.kill, "max_ms")),
    fmt(get(r.native, "max_ms")),
    r.cold && !r.cold.without_cache_na ? fmt(r.cold.without_cache_p50_ms) : "n/a",
    r.cold && !r.cold.with_cache_na ? fmt(r.cold.with_cache_p50_ms) : "n/a",
    fmt(get(r.throughput, "one_worker_per_s")), fmt(get(r.throughput, "n_workers_per_s")),
    get(r.throughput, "ratio") === undefined ? "n/a" : get(r.throughput, "ratio").toFixed(2) + "x",
  ]);
}
const widths = header.map((_, i) => Math.max(...table.map((row) => row[i].length)));
const line = (row) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
const m = sandbank.machine;
const load = m.load_avg_start ? `; load average ${m.load_avg_start} to ${m.load_avg_end} during sandbank bench` : "";
process.stdout.write(`Side by side: ${sandbank.runs} rounds (sandbank${processes}), ${peers.runs} rounds (peers); ${m.goos}/${m.goarch}, ${m.num_cpu} CPUs${load}; node ${peers.node}, ${m.go_version}\n\n`);
for (const row of table) process.stdout.write(line(row).trimEnd() + "\n");
process.stdout.write(
  "\necho: µs per run, a fresh isolate/runtime/instance per run, input {\"a\":1,\"b\":\"x\"} as JSON, value back as JSON\n" +
  "reshape: ms per run of bench/workloads/reshape.js (10k rows), wall time; RESHAPE CPU: the process's CPU time (all threads) during one run, p50\n" +
  "kill: ms until a runaway loop with a 50 ms deadline returned\n" +
  "vs quickjs: the figure divided by Sandbank quickjs's (below 1 = faster than Sandbank quickjs)\n" +
  "NATIVE KILL: runaway_native (one long native operation), 50 ms deadline; COLD: ms from starting a new sandbank process to its\n" +
  "first result, without and with the compiled-module cache; RESHAPE/s: reshapes per second with 1 and GOMAXPROCS workers.\n" +
  "The peers are measured on echo, reshape and kill only: n/a in the other columns means not measured, not zero.\n" +
  "Why a Sandbank figure is n/a, and how each kill ended: the sandbank.json next to this table (bench/peers/out/).\n");
if (!base) process.stdout.write("note: no Sandbank engine named quickjs in this run, so no ratios\n");
