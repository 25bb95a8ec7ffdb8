package jsguest

import (
	"strconv"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
)

// Record kinds: the letter that follows the nonce in a framed record
// (wasmguest's record kinds).
const (
	recStart     = wasmguest.RecStart
	recResult    = wasmguest.RecResult
	recThrew     = wasmguest.RecThrew
	recMemory    = wasmguest.RecMemory
	recInputOOM  = wasmguest.RecInputOOM
	recScriptOOM = wasmguest.RecScriptOOM
	recProtocol  = wasmguest.RecProtocol
	recHostCall  = wasmguest.RecHostCall
)

// framePrefix starts every framed record (wasmguest.FramePrefix).
const framePrefix = wasmguest.FramePrefix

// recLog is the record kind of a line the script logged, on stderr
// (wasmguest.RecLog: the one log framing, which the host's
// wasmguest.Stderr reads): the frame prefix and the nonce, 'L', the level
// and the stream as spi numbers (one digit each), the line as a JSON
// string, and a newline.
const recLog = string(rune(wasmguest.RecLog))

// recFile is the record kind of a file operation (wasmguest.RecFile).
const recFile = string(rune(wasmguest.RecFile))

// maxFileNameUnits is how much of a file name the wrapper sends
// (wasmguest.MaxFileNameUnits).
const maxFileNameUnits = "129"

// unsentUnits bounds the host-call records the wrapper keeps unsent, in
// UTF-16 units: past it, it sends them and waits for an answer before
// the script goes on, so the records waiting on stdout (at most three
// bytes per unit) stay within the slack StdoutLimit leaves above three
// bytes per byte of guest memory.
const unsentUnits = "16384"

// logLineUnits is wasmguest.LogLineUnits, how much of a logged line the
// wrapper sends, in UTF-16 units, as the wrapper's text holds it.
const logLineUnits = "16384"

// Wrapper is the JavaScript the engine evaluates (qjs -e). It is constant:
// everything that varies per run arrives on stdin (see [Payload]).
//
// An exception whose typeof is "unknown" is what QuickJS throws when it
// cannot even allocate its out-of-memory error; the wrapper reads it as
// out of memory.
//
// It is evaluated as a module (QuickJS-NG v0.11.0 evaluates -e source as a
// module), so its bindings are module-scoped and invisible to the script,
// which runs as a classic global script (std.evalScript, QuickJS's
// JS_EVAL_TYPE_GLOBAL; not an indirect eval, under which a top-level var
// would be deletable and a "use strict" script's declarations would stay
// local to the eval): its var and function declarations are
// non-deletable properties of globalThis, in strict mode too, and its
// let, const and class declarations global lexical bindings.
//
// A SyntaxError of the script itself is reported with the line QuickJS
// gives as the thrown record's third element; the host adds the column
// (see [Interpret]): QuickJS's own column is not the user's.
//
// A thenable completion value is adopted by the Promise.resolve captured
// before the script ran; the module then ends and qjs runs the job queue
// (js_std_loop): the first of finish (fulfilled), threw (rejected) and a
// zero-delay timer writes the one record and exits. qjs runs a due timer
// only once the job queue is empty, so the timer means the script has
// nothing left to do: with host calls in flight, it sends them and waits
// for the host's answers (pump), settles their promises and sets itself
// again; with none, the promise never settled. The wrapper itself must never await: qjs awaits an async
// module with a loop that runs timers between jobs, and the timer would
// then fire before a long chain settles (measured: 1,000 awaits).
const Wrapper = `import * as std from "qjs:std";
import * as os from "qjs:os";
const G = globalThis, sin = std.in, sout = std.out, serr = std.err;
const getline = sin.getline.bind(sin), readAll = sin.readAsString.bind(sin);
const puts = sout.puts.bind(sout), flush = sout.flush.bind(sout);
const eputs = serr.puts.bind(serr);
const exit = std.exit, parse = JSON.parse, stringify = JSON.stringify;
const Str = String, run = std.evalScript, IErr = G.InternalError, gc = std.gc;
const apply = Reflect.apply, split = Str.prototype.split, exec = RegExp.prototype.exec, SErr = G.SyntaxError;
const slice = Str.prototype.slice, indexOf = Str.prototype.indexOf;
const Prom = G.Promise, resolveP = Prom.resolve, thenP = Prom.prototype.then, setTimer = os.setTimeout;
const rejectP = Prom.reject, sliceS = Str.prototype.slice, Err = G.Error, TErr = G.TypeError, PX = G.Proxy;
const AT = /^ *at <evalScript>:(\d+):\d+$/;
delete G.execArgv; delete G.scriptArgs; delete G.argv0;
delete G.DOMException; delete G.gc; delete G.navigator; delete G.performance; delete G.queueMicrotask;
const nonce = getline();
const P = "` + framePrefix + `" + nonce;
const MEM = P + "M\n", TOO = P + "I\n", END = P + "E\n", LOG = P + "` + recLog + `";
function send(s) { puts(s); flush(); }
function isOOM(e) {
  if (typeof e === "unknown") return true;
  try { return IErr !== undefined && e instanceof IErr && e.message === "out of memory"; } catch (_) { return false; }
}
function text(v) { try { return Str(v); } catch (_) { return ""; } }
function field(e, k) {
  try { const v = e[k]; return typeof v === "string" ? v : undefined; } catch (_) { return undefined; }
}
function report(name, message, line) {
  const j = "[" + stringify(name) + "," + stringify(message) + (line ? "," + line : "") + "]";
  puts(P + "T" + j.length + "\n"); puts(j); send(END); exit(0);
}
function where(e) {
  try {
    if (!(e instanceof SErr)) return 0;
    const l = apply(split, field(e, "stack") || "", ["\n"]);
    const m = apply(exec, AT, [l[0]]);
    if (m === null || l.length < 3 || l[1] !== "    at evalScript (native)" || l[2].indexOf("<cmdline>") < 0) return 0;
    return +m[1];
  } catch (_) { return 0; }
}
function threw(e) {
  if (isOOM(e)) { send(MEM); exit(0); }
  if (e !== null && (typeof e === "object" || typeof e === "function")) {
    const m = field(e, "message");
    report(field(e, "name") || "", m === undefined ? text(e) : m, where(e));
  }
  report("", text(e));
}
function out(ls, args) {
  let s = "";
  for (let i = 0; i < args.length && s.length <= ` + logLineUnits + `; i++) { if (i > 0) s += " "; s += text(args[i]); }
  if (s.length > ` + logLineUnits + `) s = apply(slice, s, [0, ` + logLineUnits + `]);
  eputs(LOG + ls + stringify(s) + "\n");
}
let script, input, big = false, hosted = false;
try { script = parse(getline()); } catch (e) {
  if (isOOM(e)) { send(P + "C\n"); exit(0); }
  eputs("script: " + typeof e + " " + text(e) + "\n");
  send(P + "X\n"); exit(0);
}
try {
  const head = getline();
  hosted = head[0] === "h";
  let raw = readAll(+(hosted ? apply(sliceS, head, [1]) : head));
  big = raw.length > 65536;
  input = parse(raw);
  raw = undefined;
} catch (e) {
  if (isOOM(e)) { send(TOO); exit(0); }
  eputs("input: " + typeof e + " " + text(e) + "\n");
  send(P + "X\n"); exit(0);
}
G.input = input;
G.print = function print(...a) { out("21", a); };
if (typeof G.console === "object" && G.console !== null) {
  for (const [k, ls] of [["log", "21"], ["info", "21"], ["debug", "11"], ["warn", "32"], ["error", "42"], ["trace", "12"]]) {
    G.console[k] = function (...a) { out(ls, a); };
  }
}
input = undefined;
{
  // The run's files: each operation is a file record on stdout and a
  // reply on stdin (wasmguest's files.go); the host checks names and
  // bounds, and decides a write past a bound ("L": the run ends).
  const AB = G.ArrayBuffer, U8 = G.Uint8Array, FROZEN = G.Object.freeze, DEF = G.Object.defineProperty;
  const TA = G.Object.getPrototypeOf(U8.prototype), GD = G.Object.getOwnPropertyDescriptor;
  const tagOf = GD(TA, G.Symbol.toStringTag).get, bufOf = GD(TA, "buffer").get;
  const offOf = GD(TA, "byteOffset").get, lenOf = GD(TA, "byteLength").get;
  const writeB = sout.write.bind(sout), readB = sin.read.bind(sin);
  const FREC = P + "` + recFile + `";
  const fop = function (h, data) {
    puts(FREC + h.length + "\n"); puts(h); puts(END);
    if (typeof data === "string") { puts(data); puts(END); }
    else if (data !== undefined) { writeB(data[0], data[1], data[2]); puts(END); }
    flush();
    const l = getline();
    if (l === null) exit(1);
    if (l[0] === "L") exit(0);
    const n = +apply(sliceS, l, [1]);
    if (l[0] === "F") throw new Err(readAll(n));
    return n;
  };
  const nameOf = function (m, name) {
    if (typeof name !== "string") throw new TErr("files." + m + ": the name must be a string");
    return stringify(name.length > ` + maxFileNameUnits + ` ? apply(sliceS, name, [0, ` + maxFileNameUnits + `]) : name);
  };
  const files = FROZEN({ __proto__: null,
    read: function read(name, how) {
      const mode = how === undefined ? "t" : how === "bytes" ? "b" : undefined;
      if (mode === undefined) throw new TErr('files.read: the second argument must be "bytes" or absent');
      const n = fop('["r",' + nameOf("read", name) + ',"' + mode + '"]');
      if (mode === "t") return n > 0 ? readAll(n) : "";
      const ab = new AB(n);
      if (n > 0 && readB(ab, 0, n) !== n) exit(1);
      return new U8(ab);
    },
    write: function write(name, data) {
      const e = nameOf("write", name);
      if (typeof data === "string") { fop('["w",' + e + ',"s",' + data.length + "]", data); return; }
      if (data === null || typeof data !== "object" || apply(tagOf, data, []) !== "Uint8Array") {
        throw new TErr("files.write: the data must be a string or a Uint8Array");
      }
      const len = apply(lenOf, data, []);
      fop('["w",' + e + ',"b",' + len + "]", [apply(bufOf, data, []), apply(offOf, data, []), len]);
    },
    list: function list() { return parse(readAll(fop('["l"]'))); },
  });
  DEF(G, "files", { value: files, writable: false, enumerable: false, configurable: false });
}
let inflight = 0, unsent = 0;
const waiting = { __proto__: null };
function pump() {
  // Every call the script issued is on stdout; the host answers at least
  // one of them with a batch: "B<count>", then per answer "O<id>:<bytes>"
  // (the answer, JSON text) or "F<id>:<bytes>" (the failure's message)
  // and that many bytes.
  flush(); unsent = 0;
  const h = getline();
  if (h === null || h[0] !== "B") exit(1);
  for (let n = +apply(sliceS, h, [1]); n > 0; n--) {
    const l = getline();
    if (l === null) exit(1);
    const c = apply(indexOf, l, [":"]);
    const id = +apply(sliceS, l, [1, c]), len = +apply(sliceS, l, [c + 1]);
    const body = len > 0 ? readAll(len) : "";
    const w = waiting[id];
    if (w === undefined) continue;
    delete waiting[id]; inflight--;
    try {
      if (l[0] === "O") w[0](parse(body)); else w[1](new Err(body));
    } catch (e) {
      if (isOOM(e)) threw(e);
      w[1](e);
    }
  }
}
if (hosted) {
  // Host calls: a framed H record "<id>:<argument>\n<name>" on stdout
  // (JSON texts: JSON.stringify writes no raw newline; the name's is made
  // once per cached function), and a
  // pending promise; the record is sent when the script has nothing else
  // to do (see idle), with every other call it issued meanwhile, and the
  // promise is settled when the host's answer arrives.
  let ids = 0;
  const call = function (name, en, a) {
    try {
      let t = "null";
      if (a !== undefined) {
        t = stringify(a);
        if (typeof t !== "string") throw new TErr("host." + name + ": the argument cannot be represented as JSON");
      }
      const id = ids++;
      const j = id + ":" + t + "\n" + en;
      const p = new Prom(function (res, rej) { waiting[id] = [res, rej]; });
      puts(P + "H" + j.length + "\n"); puts(j); puts(END);
      inflight++;
      // Records wait on stdout for the host, which keeps a bounded
      // prefix of it: past ` + unsentUnits + ` units, they go now.
      unsent += j.length;
      if (unsent > ` + unsentUnits + `) pump();
      return p;
    } catch (e) {
      if (isOOM(e)) threw(e);
      return apply(rejectP, Prom, [e]);
    }
  };
  const fns = { __proto__: null };
  let cached = 0;
  G.host = new PX({}, { get: function (t, k) {
    if (typeof k !== "string" || k === "then") return undefined;
    let f = fns[k];
    if (f !== undefined) return f;
    const en = stringify(k);
    f = function (a) {
      if (arguments.length > 1) return apply(rejectP, Prom, [new TErr("host." + k + " takes one argument")]);
      return call(k, en, a);
    };
    if (cached < 64) { fns[k] = f; cached++; }
    return f;
  } });
}
if (big) gc(); // pay the collector's debt for a large input before the clock starts
send(P + "S\n");
function finish(v) {
  let j;
  try { j = stringify(v); } catch (e) {
    if (isOOM(e)) threw(e);
    report("TypeError", "the completion value cannot be represented as JSON: " + (field(e, "message") || "stringify failed"));
  }
  if (typeof j !== "string") {
    report("TypeError", "the completion value cannot be represented as JSON: it is " + (v === undefined ? "undefined" : typeof v === "object" ? "an object whose toJSON returns nothing" : "a " + typeof v));
  }
  puts(P + "R" + j.length + "\n"); puts(j); send(END); exit(0);
}
function never() { report("Error", "` + msgNeverSettled + `"); }
function idle() {
  if (inflight > 0) { pump(); setTimer(idle, 0); return; }
  never();
}
let v, then;
try { v = run(script); } catch (e) { threw(e); }
script = undefined;
if (v !== null && (typeof v === "object" || typeof v === "function")) {
  try { then = v.then; } catch (e) { threw(e); }
}
if (typeof then !== "function") finish(v);
let p;
try { p = apply(resolveP, Prom, [v]); } catch (e) { threw(e); }
v = undefined;
apply(thenP, p, [finish, threw]);
setTimer(idle, 0);
`

// HostObjects lists what the wrapper gives a script beyond ECMAScript's
// standard globals, as the conformance kit's host_objects case names them:
// print and console's log, info, warn, error, debug and trace, which write
// to the guest's stderr (never read as a result), and files' read, write
// and list (the run's files, answered by the host). The wrapper deletes
// qjs's other host globals (DOMException, gc, navigator, performance,
// queueMicrotask) before the script runs.
func HostObjects() []string { return []string{"console.*", "files.*", "print.*"} }

// msgNeverSettled is the message of a thenable completion value still
// pending once the job queue is empty: nothing is left that could settle
// it.
const msgNeverSettled = "the script's promise never settled"

// Args returns the command line for one run: the engine's own memory
// limit (in KiB, as qjs takes it) and the wrapper. Nothing secret is on
// it, and the wrapper deletes the argument globals before the script runs.
func Args(memoryBytes int64) []string {
	kib := memoryBytes / 1024
	if kib < 1 {
		kib = 1
	}
	return []string{"qjs", "--memory-limit", strconv.FormatInt(kib, 10), "-e", Wrapper}
}
