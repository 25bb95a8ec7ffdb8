// peers.js measures the engines people pick instead of Sandbank on the same
// workloads that "sandbank bench" runs, the same way: a fresh isolate or
// runtime per run, the input injected as JSON text and parsed inside the
// sandbox, the completion value returned to the host as JSON text.
//
//   node --no-node-snapshot peers.js [--runs N] [--engine NAME]...
//
// Engines:
//   isolated-vm           a new ivm.Isolate (memoryLimit 32 MB) per run
//   qjs-emscripten-shared quickjs-emscripten: one shared wasm module
//                         (getQuickJS), a new runtime + context per run
//   qjs-emscripten-fresh  quickjs-emscripten: a new wasm module instance
//                         (newQuickJSWASMModule) per run: the only mode
//                         whose runs share no wasm memory
// Workloads (the scripts Sandbank uses, read from this repository):
//   echo     fixtures/javascript/echo.js, input {"a":1,"b":"x"}: p50, p99 µs
//   reshape  bench/workloads/reshape.js: p50 ms, wall time and the
//            process's CPU time (process.cpuUsage: every thread, so
//            isolated-vm's isolate threads and V8's GC count); the value must equal
//            bench/workloads/reshape.expected.json (MISMATCH otherwise)
//   kill     fixtures/javascript/runaway_loop.js with a 50 ms deadline
//            (isolated-vm's timeout, quickjs-emscripten's interrupt
//            handler): time until the call returned, p50 and max ms
// Rounds are interleaved (one round runs every engine once, in rotating
// order) after two warm-up rounds, like sandbank bench. Output: one JSON
// object on stdout; progress on stderr. Nothing here is estimated.
"use strict";

const fs = require("fs");
const path = require("path");
const { performance } = require("perf_hooks");
const { isDeepStrictEqual } = require("util");

const root = path.resolve(__dirname, "..", "..");
const read = (p) => fs.readFileSync(path.join(root, p), "utf8");
const ECHO = read("fixtures/javascript/echo.js");
const RESHAPE = read("bench/workloads/reshape.js");
const LOOP = read("fixtures/javascript/runaway_loop.js");
const EXPECTED = JSON.parse(read("bench/workloads/reshape.expected.json"));
const ECHO_INPUT = '{"a":1,"b":"x"}';
const MEMORY_BYTES = 32 << 20;
const DEADLINE_MS = 50;
const ECHO_PER_ROUND = 10;
const WARMUP_ROUNDS = 2;

function parseArgs(argv) {
  const o = { runs: 20, engines: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--runs") o.runs = Number(argv[++i]);
    else if (argv[i] === "--engine") o.engines.push(argv[++i]);
    else throw new Error("peers: unknown argument " + argv[i]);
  }
  if (!Number.isInteger(o.runs) || o.runs < 1) throw new Error("peers: --runs must be a positive integer");
  return o;
}

// Each engine: run(script, inputJSON, deadlineMs) returns the completion
// value as JSON text, or throws.
function isolatedVM() {
  const ivm = require("isolated-vm");
  return {
    name: "isolated-vm",
    version: require("isolated-vm/package.json").version,
    run(src, inputJSON, deadlineMs) {
      const isolate = new ivm.Isolate({ memoryLimit: MEMORY_BYTES >> 20 });
      try {
        const context = isolate.createContextSync();
        context.global.setSync("__input", inputJSON);
        context.evalSync("globalThis.input = JSON.parse(__input);");
        const script = isolate.compileScriptSync(src);
        const opts = { copy: true };
        if (deadlineMs) opts.timeout = deadlineMs;
        const value = script.runSync(context, opts);
        return JSON.stringify(value);
      } finally {
        isolate.dispose();
      }
    },
  };
}

function quickjsEmscripten(mode, qjs) {
  const version = require("quickjs-emscripten/package.json").version;
  const once = (QuickJS, src, inputJSON, deadlineMs) => {
    const rt = QuickJS.newRuntime();
    try {
      rt.setMemoryLimit(MEMORY_BYTES);
      if (deadlineMs) rt.setInterruptHandler(qjs.shouldInterruptAfterDeadline(Date.now() + deadlineMs));
      const vm = rt.newContext();
      try {
        const s = vm.newString(inputJSON);
        vm.setProp(vm.global, "__input", s);
        s.dispose();
        vm.unwrapResult(vm.evalCode("globalThis.input = JSON.parse(__input);")).dispose();
        const h = vm.unwrapResult(vm.evalCode(src));
        const value = vm.dump(h);
        h.dispose();
        return JSON.stringify(value);
      } finally {
        vm.dispose();
      }
    } finally {
      rt.dispose();
    }
  };
  if (mode === "shared") {
    let shared;
    return {
      name: "qjs-emscripten-shared",
      version,
      async init() { shared = await qjs.getQuickJS(); },
      run: (src, input, d) => once(shared, src, input, d),
    };
  }
  return {
    name: "qjs-emscripten-fresh",
    version,
    // A new wasm module instance (new memory, new QuickJS state) per run.
    async runAsync(src, input, d) {
      const QuickJS = await qjs.newQuickJSWASMModule();
      return once(QuickJS, src, input, d);
    },
  };
}

async function call(engine, src, input, deadlineMs) {
  if (engine.runAsync) return engine.runAsync(src, input, deadlineMs);
  return engine.run(src, input, deadlineMs);
}

function percentile(xs, p) {
  const s = xs.slice().sort((a, b) => a - b);
  const i = Math.ceil(p * s.length) - 1;
  return s[Math.max(0, Math.min(i, s.length - 1))];
}
const round2 = (x) => Math.round(x * 100) / 100;

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const qjs = require("quickjs-emscripten");
  const all = [isolatedVM(), quickjsEmscripten("shared", qjs), quickjsEmscripten("fresh", qjs)];
  const engines = o.engines.length ? o.engines.map((n) => {
    const e = all.find((x) => x.name === n);
    if (!e) throw new Error("peers: unknown engine " + n + " (engines: " + all.map((x) => x.name).join(", ") + ")");
    return e;
  }) : all;
  for (const e of engines) {
    if (e.init) await e.init();
    e.echo = []; e.reshape = []; e.reshapeCPU = []; e.kill = []; e.killEndedBy = {}; e.errors = []; e.matches = true;
  }
  const addError = (e, msg) => { if (!e.errors.includes(msg)) e.errors.push(msg); };

  async function round(e, keep) {
    for (let i = 0; i < ECHO_PER_ROUND; i++) {
      const t0 = performance.now();
      try {
        const v = await call(e, ECHO, ECHO_INPUT);
        const d = performance.now() - t0;
        if (!isDeepStrictEqual(JSON.parse(v), JSON.parse(ECHO_INPUT))) addError(e, "echo: the value differs from the input");
        else if (keep) e.echo.push(d);
      } catch (err) { addError(e, "echo: " + String(err && err.message || err)); }
    }
    {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      try {
        const v = await call(e, RESHAPE, "null");
        const d = performance.now() - t0;
        const c = process.cpuUsage(c0);
        if (!isDeepStrictEqual(JSON.parse(v), EXPECTED)) { e.matches = false; addError(e, "reshape: MISMATCH: the value differs from the JavaScript result"); }
        else if (keep) { e.reshape.push(d); e.reshapeCPU.push((c.user + c.system) / 1000); }
      } catch (err) { addError(e, "reshape: " + String(err && err.message || err)); }
    }
    {
      const t0 = performance.now();
      let ended = "value";
      try { await call(e, LOOP, "null", DEADLINE_MS); } catch (err) { ended = /interrupt|timed out|timeout/i.test(String(err && err.message || err)) ? "deadline" : "error"; }
      const d = performance.now() - t0;
      if (keep) { e.kill.push(d); e.killEndedBy[ended] = (e.killEndedBy[ended] || 0) + 1; }
    }
  }

  for (let r = 0; r < WARMUP_ROUNDS; r++) {
    process.stderr.write(`peers: warm-up ${r + 1}/${WARMUP_ROUNDS}\n`);
    for (const e of engines) await round(e, false);
  }
  for (let r = 0; r < o.runs; r++) {
    if (r % 5 === 0 || r === o.runs - 1) process.stderr.write(`peers: round ${r + 1}/${o.runs}\n`);
    for (let i = 0; i < engines.length; i++) await round(engines[(i + r) % engines.length], true);
  }

  const out = {
    node: process.version,
    runs: o.runs,
    engines: engines.map((e) => ({
      engine: e.name,
      version: e.version,
      echo: e.echo.length ? { samples: e.echo.length, p50_us: round2(percentile(e.echo, 0.5) * 1000), p99_us: round2(percentile(e.echo, 0.99) * 1000) } : { na: "no successful run" },
      reshape: e.reshape.length ? { samples: e.reshape.length, p50_ms: round2(percentile(e.reshape, 0.5)), cpu_p50_ms: round2(percentile(e.reshapeCPU, 0.5)), matches_js: e.matches } : { na: "no successful run", matches_js: e.matches },
      kill: e.kill.length ? {
        fixture: "runaway_loop", deadline_ms: DEADLINE_MS, samples: e.kill.length,
        p50_ms: round2(percentile(e.kill, 0.5)), max_ms: round2(Math.max(...e.kill)),
        overshoot_p50_ms: round2(percentile(e.kill, 0.5) - DEADLINE_MS), overshoot_max_ms: round2(Math.max(...e.kill) - DEADLINE_MS),
        ended_by: e.killEndedBy,
      } : { na: "no run finished" },
      errors: e.errors,
    })),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
  if (engines.some((e) => e.errors.length)) {
    for (const e of engines) for (const m of e.errors) process.stderr.write(`peers: ${e.name}: ${m}\n`);
    process.exitCode = 1;
  }
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
