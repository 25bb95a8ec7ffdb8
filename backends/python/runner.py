# runner.py: the Python side of backends/python, embedded in the Go
# package and run as `python3 -S -s -B -c RUNNER LIMITS` inside the
# sandbox, one process per run (pid 1 of its pid namespace). It is
# trusted code until it sends the start frame: it sets the run's rlimits
# before it reads the script, makes the clock and random deterministic,
# and speaks the backend's protocol (run.go):
#
#   Go -> runner   one line {"s": SCRIPT_BYTES, "i": INPUT_BYTES}, then the
#                  script's bytes, then the input's JSON text; later, one
#                  frame per host call answered: a kind byte (O: the
#                  answer's JSON text, F: the failure's text in UTF-8), the
#                  call's number (8 bytes, big-endian: the host numbers the
#                  call frames it reads from 0), the payload's length (4
#                  bytes, big-endian) and the payload.
#   runner -> Go   frames: a kind byte, the payload's length (4 bytes,
#                  big-endian), the payload. S (start; empty) as the
#                  script starts; L (log: a level byte d/i/w/e, a stream
#                  byte o/e, the line in UTF-8); C (host call: the name's
#                  length in one byte, the name, the argument's JSON
#                  text); and one ending: V (the value's JSON text) or T
#                  (thrown: the name's length in one byte, the name, the
#                  message in UTF-8). Before S only, M (the request did
#                  not fit in memory: "s" while reading the script, "i"
#                  while parsing the input).
#
# Everything the process writes once the script runs is the script's to
# forge (the script shares the process): the Go side believes none of it
# but the script's own value, error, log lines and host calls, bounds
# every frame by its kind before it buffers it, and decides every limit
# from what it observes outside the sandbox.
#
# The file only defines names when it is not __main__: the zygote
# (zygote.py) executes it in a prepared run's process before the run's
# request exists, calls _prepare() there, and _go(LIMITS) once the
# host's go arrives, so that what does not depend on the run is done off
# the request path. Run as `python3 -c RUNNER LIMITS` (a sandbox of the
# run's own, or the probe) it does both at once.
import sys
import os
import json
import resource
import _thread

# The protocol's file descriptors (_protocol_fds), the run's limits and
# the bounds read from them (_start).
_IN = _OUT = -1
_LIMITS = {}
_MAX_LINE = _MAX_TEXT = 0


def _protocol_fds():
    # The protocol's file descriptors, moved away from 0 and 1 so that a
    # script writing to them (os.write(1, ...)) lands in the bounded stderr.
    global _IN, _OUT
    _IN = os.dup(0)
    _OUT = os.dup(1)
    r, w = os.pipe()
    os.dup2(r, 0)
    os.close(r)
    os.close(w)
    os.dup2(2, 1)


# Frames are written whole: a script's threads may log or call at once.
_writing = _thread.RLock()


def _write(data):
    with _writing:
        view = memoryview(data)
        while view:
            n = os.write(_OUT, view)
            view = view[n:]


def _frame(kind, payload):
    _write(kind + len(payload).to_bytes(4, "big") + payload)


def _utf8(s, n):
    # s in UTF-8, cut to at most n bytes on a character boundary; a lone
    # surrogate (which UTF-8 cannot carry) becomes U+FFFD.
    try:
        b = s.encode("utf-8")
    except UnicodeEncodeError:
        b = "".join("\ufffd" if 0xD800 <= ord(c) < 0xE000 else c for c in s).encode("utf-8")
    if len(b) <= n:
        return b
    while n > 0 and 0x80 <= b[n] < 0xC0:
        n -= 1
    return b[:n]


_LEVELS = {"debug": b"d", "info": b"i", "warn": b"w", "error": b"e"}
_STREAMS = {"stdout": b"o", "stderr": b"e"}


def _log(level, stream, line):
    _frame(b"L", _LEVELS[level] + _STREAMS[stream] + _utf8(line, _MAX_LINE))


def _limits():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (_LIMITS["nofile"], _LIMITS["nofile"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (_LIMITS["nproc"], _LIMITS["nproc"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (_LIMITS["fsize"], _LIMITS["fsize"]))
    cpu = _LIMITS["cpu"]
    # The bound the script cannot lift: SIGKILL from the kernel at the
    # budget rounded up to a whole second (soft and hard alike: the soft
    # limit's SIGXCPU would be ignored, the process being pid 1 of its
    # namespace).
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    # The precise budget: SIGPROF once the process has used cpuMs of CPU,
    # handled by ending the process (pid 1 ignores a signal it does not
    # handle). A script may catch it or reset the timer; the host decides
    # the CPU limit from the CPU time it reads from outside either way.
    import _signal

    _signal.signal(_signal.SIGPROF, lambda *_: os._exit(0))
    _signal.setitimer(_signal.ITIMER_PROF, _LIMITS["cpuMs"] / 1000.0)


import _ast
import builtins
import io
import time

# The deterministic clock: every reading advances it by one millisecond,
# from 2000-01-01T00:00:00Z; sleeping advances it without waiting.
_EPOCH_NS = 946684800000 * 1000000
_clock = [0]


def _tick():
    _clock[0] += 1000000
    return _clock[0]


def _sleep(secs):
    if secs < 0:
        raise ValueError("sleep length must be non-negative")
    _clock[0] += int(secs * 1e9)


def _now_ns():
    return _EPOCH_NS + _tick()


def _fake_time():
    time.time = lambda: _now_ns() / 1e9
    time.time_ns = _now_ns
    time.monotonic = lambda: _tick() / 1e9
    time.monotonic_ns = _tick
    time.perf_counter = lambda: _tick() / 1e9
    time.perf_counter_ns = _tick
    time.process_time = lambda: _tick() / 1e9
    time.process_time_ns = _tick
    time.thread_time = lambda: _tick() / 1e9
    time.thread_time_ns = _tick
    time.clock_gettime = lambda clk: _now_ns() / 1e9
    time.clock_gettime_ns = lambda clk: _now_ns()
    time.sleep = _sleep
    gm, local, strf, ctime, asctime = time.gmtime, time.localtime, time.strftime, time.ctime, time.asctime
    time.gmtime = lambda secs=None: gm(time.time() if secs is None else secs)
    time.localtime = lambda secs=None: local(time.time() if secs is None else secs)
    time.ctime = lambda secs=None: ctime(time.time() if secs is None else secs)
    time.asctime = lambda t=None: asctime(time.localtime() if t is None else t)
    time.strftime = lambda fmt, t=None: strf(fmt, time.localtime() if t is None else t)


# Deterministic randomness: os.urandom (and what uses it: random's
# SystemRandom, secrets, uuid4) is a seeded generator, and random is
# seeded as it is imported (see _CONFIGURE).
_entropy = [None]


def _urandom(n):
    if _entropy[0] is None:
        import random

        _entropy[0] = random.Random(_LIMITS["seed"])
    return _entropy[0].randbytes(n)



# Logs: print, sys.stdout, sys.stderr and logging become lines of the run's
# log, each cut at the backend's line bound.

class _LogWriter(io.TextIOBase):
    def __init__(self, level, stream):
        self._level = level
        self._stream = stream
        self._buf = []
        self._len = 0

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str")
        n = len(s)
        while s:
            i = s.find("\n")
            if i < 0:
                self._add(s)
                break
            self._add(s[:i])
            self._emit()
            s = s[i + 1:]
        return n

    def _add(self, part):
        room = _MAX_LINE - self._len
        if room > 0:
            part = part[:room]
            self._buf.append(part)
            self._len += len(part)

    def _emit(self):
        line = "".join(self._buf)
        self._buf = []
        self._len = 0
        _log(self._level, self._stream, line)

    def flush(self):
        if self._buf:
            self._emit()


# Host calls.
class HostError(Exception):
    """A host function's error; its message is the host's text exactly."""


# Calls in flight, by id: the future of each call made inside a running
# event loop whose answer has not arrived. A synchronous call waits for
# its own answer, settling the others it reads meanwhile; a thread of the
# script may make one while the loop waits for answers, so reading the
# protocol input is under _reading, and a future is settled on its loop's
# thread (call_soon_threadsafe).
_calls = {}
_waiting = set()  # ids of synchronous calls waiting for their answer
_replies = {}  # their answers, read by another thread
_next_id = [0]
_reading = _thread.allocate_lock()


def _issue(name, args, register):
    try:
        text = json.dumps(args, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        raise TypeError("python: a host call's argument must be JSON (no NaN, infinity, set or bytes)") from None
    encoded = _utf8(name, 256)
    if len(encoded) > 255:
        raise HostError("python: a host function's name is at most 255 bytes")
    payload = bytes((len(encoded),)) + encoded + text.encode("ascii")
    with _writing:  # numbers in the order the frames are written
        i = _next_id[0]
        _next_id[0] += 1
        register(i)  # before the frame: its answer may come at once
        _frame(b"C", payload)
    return i


def _outcome(reply):
    # reply is (number, kind, payload): the value, or the HostError.
    if reply[1] == b"F":
        return HostError(reply[2].decode("utf-8", "replace"))
    return json.loads(reply[2])


def _resolve(fut, reply):
    if fut.done():
        return
    v = _outcome(reply)
    if isinstance(v, HostError) and reply[1] == b"F":
        fut.set_exception(v)
    else:
        fut.set_result(v)


def _settle(reply):
    i = reply[0]
    fut = _calls.pop(i, None)
    if fut is None:
        if i in _waiting:
            _replies[i] = reply
        return
    loop = fut.get_loop()
    if loop.is_closed():
        return
    try:
        loop.call_soon_threadsafe(_resolve, fut, reply)
    except RuntimeError:  # the loop closed meanwhile
        pass


def _call(name, args):
    i = _issue(name, args, _waiting.add)
    try:
        while True:
            with _reading:
                reply = _replies.pop(i, None)
                if reply is not None:
                    break
                reply = _read_answer()
                if reply[0] == i:
                    # The answers read with it: the loop may be waiting
                    # for them, and the input holds them no more.
                    _settle_read()
                    break
                _settle(reply)
    finally:
        _waiting.discard(i)
    v = _outcome(reply)
    if reply[1] == b"F":
        raise v
    return v


def _start(loop, name, args):
    fut = loop.create_future()
    _issue(name, args, lambda i: _calls.__setitem__(i, fut))
    return fut


def _answers():
    # The protocol input is readable: settle every answer read whole. A
    # thread waiting for its own answer may be reading: it settles them.
    # Readiness is checked again under the lock: that thread may have
    # read everything since the loop saw it.
    if not _reading.acquire(False):
        return
    try:
        import select

        if select.select([_IN], [], [], 0)[0]:
            _fill(1 << 20)
        _settle_read()
    finally:
        _reading.release()


def _settle_read():
    while True:
        reply = _take_answer()
        if reply is None:
            return
        _settle(reply)


class _Host:
    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)

        def call(args=None):
            aio = sys.modules.get("asyncio")
            loop = None if aio is None else aio._get_running_loop()
            if loop is None:
                return _call(name, args)
            return _start(loop, name, args)

        call.__name__ = name
        return call

    def __repr__(self):
        return "<host>"


# Modules configured as they are first imported (they are slow to
# import, and most scripts never do): logging sends its records to the
# run's log; asyncio's event loops run on a virtual clock.
def _configure_logging(logging):
    class _LogHandler(logging.Handler):
        def emit(self, record):
            try:
                text = self.format(record)
            except Exception:
                text = "(the log record could not be formatted)"
            if record.levelno < logging.INFO:
                level, stream = "debug", "stdout"
            elif record.levelno < logging.WARNING:
                level, stream = "info", "stdout"
            elif record.levelno < logging.ERROR:
                level, stream = "warn", "stderr"
            else:
                level, stream = "error", "stderr"
            for line in text.split("\n"):
                _log(level, stream, line[:_MAX_LINE])

    logging.root.handlers[:] = [_LogHandler()]
    logging.root.setLevel(logging.INFO)


class NeverSettles(Exception):
    """The script awaits something that nothing can ever complete."""


def _configure_asyncio(asyncio):
    # Waiting for a timer advances the fake clock instead of sleeping;
    # waiting with nothing that could ever wake the loop (no timer, no
    # ready file, no other thread) is the script's error.
    import selectors
    import threading

    # Every loop's selector also watches the protocol input: while host
    # calls are in flight, the loop waits for their answers (a host call
    # takes no time on the virtual clock: a timer fires only once no call
    # is in flight).
    class _VirtualSelector(selectors.BaseSelector):
        def __init__(self):
            self._real = selectors.DefaultSelector()
            self._real.register(_IN, selectors.EVENT_READ, _answers)

        def _select(self, timeout):
            out = []
            self._answered = False
            for key, events in self._real.select(timeout):
                if key.data is _answers:
                    _answers()
                    self._answered = True
                else:
                    out.append((key, events))
            return out

        def register(self, fileobj, events, data=None):
            return self._real.register(fileobj, events, data)

        def unregister(self, fileobj):
            return self._real.unregister(fileobj)

        def modify(self, fileobj, events, data=None):
            return self._real.modify(fileobj, events, data)

        def get_map(self):
            return self._real.get_map()

        def close(self):
            self._real.close()

        def select(self, timeout=None):
            ready = self._select(0)
            if ready or self._answered or timeout == 0:
                return ready
            if _calls:
                return self._select(None)
            if timeout is None:
                if threading.active_count() > 1:
                    return self._select(None)
                raise NeverSettles("the script awaits something that never completes")
            if timeout > 0:
                _clock[0] += int(timeout * 1e9)
            return []

    class _Policy(asyncio.DefaultEventLoopPolicy):
        @staticmethod
        def _loop_factory():
            return asyncio.SelectorEventLoop(_VirtualSelector())

    asyncio.set_event_loop_policy(_Policy())


def _configure_random(random):
    random._urandom = _urandom  # SystemRandom, secrets (bound as random was imported)
    random.seed(_LIMITS["seed"])
    # An unseeded Random() is seeded too: the n-th of the run gets the
    # same seed in every run.
    seed = random.Random.seed
    made = [0]

    def _seed(self, a=None, version=2):
        if a is None:
            made[0] += 1
            a = (_LIMITS["seed"], made[0])
            a = "%d/%d" % a
        seed(self, a, version)

    random.Random.seed = _seed


def _configure_uuid(uuid):
    # uuid1 reads the fake clock and a fixed node (a locally administered
    # address), never libuuid's clock or the host's network card.
    uuid._generate_time_safe = None
    uuid._node = 0x02_00_5A_4E_4B_01


def _configure_numpy_random(nprandom):
    # numpy's global generator, made (from the host's entropy) as
    # numpy.random was imported: seeded as random is. A new
    # default_rng() or RandomState() takes its entropy from secrets,
    # which reads os.urandom: the run's seeded generator.
    nprandom.seed(_LIMITS["seed"] % (1 << 32))


_CONFIGURE = {
    "logging": _configure_logging,
    "asyncio": _configure_asyncio,
    "random": _configure_random,
    "uuid": _configure_uuid,
    "numpy.random": _configure_numpy_random,
}


class _ConfigureOnImport:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name not in _CONFIGURE:
            return None
        for finder in sys.meta_path:
            if finder is cls:
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = loader.exec_module

        class _Loader:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                exec_module(module)
                _CONFIGURE[name](module)

        spec.loader = _Loader()
        return spec


_loop = [None]


def _run(coro):
    if _loop[0] is None:
        import asyncio

        _loop[0] = asyncio.new_event_loop()
        asyncio.set_event_loop(_loop[0])
    return _loop[0].run_until_complete(coro)


_inbuf = bytearray()


def _read_exact(n):
    global _inbuf
    while len(_inbuf) < n:
        chunk = os.read(_IN, max(65536, n - len(_inbuf)))
        if not chunk:
            os._exit(3)
        _inbuf += chunk
    out = bytes(_inbuf[:n])
    del _inbuf[:n]
    return out


def _fill(n):
    global _inbuf
    chunk = os.read(_IN, n)
    if not chunk:
        os._exit(3)
    _inbuf += chunk


def _take_line():
    i = _inbuf.find(b"\n")
    if i < 0:
        return None
    out = bytes(_inbuf[:i])
    del _inbuf[: i + 1]
    return out


def _read_line():
    while True:
        line = _take_line()
        if line is not None:
            return line
        _fill(65536)


_ANSWER_HEADER = 13  # kind, number (8 bytes), length (4 bytes)


def _take_answer():
    # The first whole answer frame in the input read so far, or None.
    if len(_inbuf) < _ANSWER_HEADER:
        return None
    n = int.from_bytes(_inbuf[9:13], "big")
    if len(_inbuf) < _ANSWER_HEADER + n:
        return None
    reply = (int.from_bytes(_inbuf[1:9], "big"), bytes(_inbuf[0:1]), bytes(_inbuf[13 : 13 + n]))
    del _inbuf[: 13 + n]
    return reply


def _read_answer():
    while True:
        reply = _take_answer()
        if reply is not None:
            return reply
        _fill(65536)


def _position(tb):
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<script>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


# The thrown MemoryError, built before the script runs: sending it must not
# allocate.
_MEMORY_ERROR = b"T" + (12).to_bytes(4, "big") + bytes((11,)) + b"MemoryError"


def _threw(e):
    name = _utf8(type(e).__name__, 255)
    try:
        msg = str(e)
    except Exception:
        msg = "(the exception's message could not be made)"
    if isinstance(e, SyntaxError) and e.lineno is not None:
        msg = "line %d: %s" % (e.lineno, e.msg)
    else:
        line = _position(e.__traceback__)
        if line is not None:
            msg = "line %d: %s" % (line, msg)
    _frame(b"T", bytes((len(name),)) + name + _utf8(msg, _MAX_TEXT))


_CO_COROUTINE = 0x80
_ONLY_AST = 0x0400  # ast.PyCF_ONLY_AST, without importing ast
_FLAGS = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def _compile(source):
    tree = compile(source, "<script>", "exec", _ONLY_AST | _FLAGS, dont_inherit=True)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = _ast.Expression(tree.body.pop().value)
    body = compile(tree, "<script>", "exec", _FLAGS, dont_inherit=True)
    if last is not None:
        last = compile(last, "<script>", "eval", _FLAGS, dont_inherit=True)
    return body, last


def _exec(code, g):
    r = eval(code, g)
    if code.co_flags & _CO_COROUTINE:
        r = _run(r)
    return r


def _refuse(v):
    raise TypeError("python: the result holds a value of type %s, which JSON cannot carry" % type(v).__name__[:64])


_started = [False]


def _main():
    # Until the start frame the process runs only this file: what it
    # reports here (the request did not fit in memory) is the host's own
    # code reporting, which the host believes before the start frame only.
    try:
        header = json.loads(_read_line())
        source = _read_exact(header["s"])
    except MemoryError:
        _frame(b"M", b"s")
        return
    try:
        value = json.loads(_read_exact(header["i"]))
        g = {"__name__": "__main__", "__builtins__": builtins, "input": value, "host": _Host(), "HostError": HostError}
        del value
        _files_in(header.get("f", ()))
    except (MemoryError, RecursionError, OSError):
        _frame(b"M", b"i")
        return
    _started[0] = True
    _frame(b"S", b"")
    try:
        try:
            body, last = _compile(source)
        except (SyntaxError, ValueError) as e:
            _threw(e if isinstance(e, SyntaxError) else SyntaxError(str(e)))
            return
        del source
        _exec(body, g)
        result = None if last is None else _exec(last, g)
        if hasattr(result, "__await__"):
            result = _run(result)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            text = json.dumps(result, ensure_ascii=True, allow_nan=False, separators=(",", ":"), default=_refuse)
        except ValueError as e:
            if "Out of range float" in str(e):
                raise ValueError("python: the result holds NaN or an infinity, which JSON cannot carry") from None
            raise
        if len(text) > _LIMITS["maxResult"]:
            raise ValueError("python: the result is larger than the backend's MaxResultBytes")
        data = text.encode("ascii")
        del text, result
        _files_out()
        with _writing:
            _write(b"V" + len(data).to_bytes(4, "big"))
            _write(data)
    except BaseException as e:  # the script's failure, whatever it raised
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        try:
            _threw(e)
        except MemoryError:
            _write(_MEMORY_ERROR)


# Files (files.go has the host's side). The input files are written,
# read-only, in the working directory (the run's /tmp) before the script
# starts, and out/ is made there, empty. Once the script has its value,
# every entry of out/ crosses as a frame: W (a regular file: the name's
# length in one byte, the name, the content) or X (anything else: the
# name's length, the name, a byte saying what it is: d a directory, l a
# symbolic link, o another kind). The host bounds and checks them; a
# symbolic link is never followed.
_OUT_DIR = [None]


def _files_in(files):
    if _LIMITS["fsize"] <= 0:
        if files:
            raise OSError("no scratch directory for input files")
        return
    for name, size in files:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        try:
            left = size
            while left > 0:
                if _inbuf:
                    chunk = bytes(_inbuf[:left])
                    del _inbuf[: len(chunk)]
                else:
                    chunk = os.read(_IN, min(left, 1 << 16))
                    if not chunk:
                        os._exit(3)
                left -= len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    os.mkdir("out", 0o755)
    _OUT_DIR[0] = os.path.join(os.getcwd(), "out")


def _files_out():
    if _OUT_DIR[0] is None:
        return
    import stat

    try:
        d = os.open(_OUT_DIR[0], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return  # the script removed out/: no files
    except OSError:
        _frame(b"X", b"\x00o")  # out/ itself is not a directory
        return
    try:
        for name in sorted(os.listdir(d)):
            encoded = _utf8(name, 255)
            head = bytes((len(encoded),)) + encoded
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=d)
            except OSError:
                st = os.lstat(name, dir_fd=d)
                _frame(b"X", head + (b"l" if stat.S_ISLNK(st.st_mode) else b"o"))
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    _frame(b"X", head + (b"d" if stat.S_ISDIR(st.st_mode) else b"o"))
                    continue
                parts = []
                while True:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        break
                    parts.append(chunk)
                _frame(b"W", head + b"".join(parts))
                del parts
            finally:
                os.close(fd)
    finally:
        os.close(d)


# Packages (packages.go has the host's side): the allow-listed packages
# of the system's site directories, imported before any run exists, by
# the zygote or (without one) by the runner before it prepares the run.
def _load_packages(spec):
    # spec: {"env": the variables the packages read as they load (one
    # thread for the numerical libraries, matplotlib's Agg backend and
    # its read-only configuration directory), "path": the site
    # directories, "import": the modules to import}. A module the import
    # hook configures (logging, random, ...) that a package imports is
    # configured by each run as it starts (_configure_loaded).
    import importlib

    if spec.get("copy"):
        import shutil

        shutil.copytree(spec["copy"][0], spec["copy"][1])
    for k, v in spec.get("env", {}).items():
        os.environ[k] = v
    for d in spec.get("path", ()):
        if d not in sys.path:
            sys.path.append(d)
    for name in spec.get("import", ()):
        try:
            importlib.import_module(name)
        except ImportError:
            if "." not in name:
                raise  # a listed package; the others are a package's extras
    import gc

    # The interpreter's objects so far are never collected: a run's
    # collection does not touch (and so copy) the zygote's pages.
    gc.freeze()


def _configure_loaded():
    # The modules of _CONFIGURE already imported (a package imported them
    # before the run): configured for this run as the hook would have.
    for name, configure in _CONFIGURE.items():
        module = sys.modules.get(name)
        if module is not None:
            configure(module)


def _probe_packages(spec, out):
    # On the host, outside any sandbox: imports the packages as the zygote
    # will, and reports what the sandbox must bind for them: the
    # top-level entries of the site directories that were imported or
    # opened (the packages and their dependencies), the other files
    # opened (data) and mapped (shared libraries, below), and the data
    # directory a package names (matplotlib's, its fonts), adding the
    # files mapped once they are imported to out["files"]. It leaves
    # matplotlib's font cache in MPLCONFIGDIR with the fonts the package
    # ships only, so that every run sees the same fonts.
    import site

    sites = [os.path.realpath(d) for d in site.getsitepackages() if os.path.isdir(d)]
    spec = dict(spec, path=sites)
    opened = set()

    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes)):
            p = os.fsdecode(args[0])
            if os.path.isabs(p):
                opened.add(p)

    sys.addaudithook(hook)
    try:
        _load_packages(spec)
    except Exception as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
        return
    # The zygote forks: it must hold one thread once the packages are
    # imported, as the probe does with the same environment.
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        out["error"] = "the process holds %d threads once they are imported, not one: the zygote could not fork safely" % threads
        return
    entries, trees, files = set(), set(), set()

    def entry(p):
        p = os.path.realpath(p)
        for d in sites:
            if p.startswith(d + "/"):
                entries.add(os.path.join(d, p[len(d) + 1 :].split("/", 1)[0]))
                return True
        return False

    for m in list(sys.modules.values()):
        for p in [getattr(m, "__file__", None)] + list(getattr(m, "__path__", None) or ()):
            if isinstance(p, str):
                entry(p)
    conf = spec.get("env", {}).get("MPLCONFIGDIR", "")
    for p in opened:
        if entry(p) or p.startswith(("/proc/", "/dev/", "/sys/")) or (conf and p.startswith(conf + "/")):
            continue
        if os.path.isfile(p):
            files.add(os.path.realpath(p))
    mpl = sys.modules.get("matplotlib")
    if mpl is not None:
        data = os.path.realpath(mpl.get_data_path())
        trees.add(data)
        fm = sys.modules.get("matplotlib.font_manager")
        if fm is not None and conf:
            fm.fontManager.ttflist = [f for f in fm.fontManager.ttflist if os.path.realpath(f.fname).startswith(data + "/")]
            fm.fontManager.afmlist = [f for f in fm.fontManager.afmlist if os.path.realpath(f.fname).startswith(data + "/")]
            fm.json_dump(fm.fontManager, os.path.join(conf, "fontlist-v%s.json" % fm.FontManager.__version__))
    out["packages"] = {"path": sites, "entries": sorted(entries), "trees": sorted(trees), "files": sorted(files)}
    mapped = set(out["files"])
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                mapped.add(parts[5].strip())
    out["files"] = sorted(mapped)


def _probe():
    # Run by the backend's check of the machine on the host, outside any
    # sandbox: reports the interpreter, its address space at this point
    # (what the memory limit is added to) and every file it maps once each
    # extension module of its standard library is loaded (what the sandbox
    # binds). A module is loaded as an import loads it (dlopen with the
    # interpreter's flags, which maps the libraries it needs), without its
    # init: importing each ran Python code (_asyncio imports asyncio, and
    # with it ssl, logging, typing...) that maps nothing more and cost
    # most of the probe. The two modules whose init starts a library
    # that reads its own configuration (OpenSSL, which may load the
    # providers it names) are imported too.
    with open("/proc/self/statm") as f:
        base = int(f.read().split()[0]) * resource.getpagesize()
    import sysconfig
    import _ctypes
    paths = sysconfig.get_paths()
    dynload = os.path.join(paths["platstdlib"], "lib-dynload")
    try:
        names = os.listdir(dynload)
    except OSError:
        names = []
    flags = sys.getdlopenflags()
    for n in sorted(names):
        mod = n.split(".", 1)[0]
        if n.endswith(".so") and mod not in ("_tkinter", "_curses", "_curses_panel", "readline"):
            try:
                _ctypes.dlopen(os.path.join(dynload, n), flags)
            except OSError:
                pass
    for mod in ("_hashlib", "_ssl"):
        try:
            __import__(mod)
        except Exception:
            pass
    files = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                files.add(parts[5].strip())
    out = {
        "version": list(sys.version_info[:3]),
        "executable": os.path.realpath(sys.executable),
        "stdlib": os.path.realpath(paths["stdlib"]),
        "platstdlib": os.path.realpath(paths["platstdlib"]),
        "base": base,
        "files": sorted(files),
    }
    if _LIMITS.get("packages"):
        _probe_packages(_LIMITS["packages"], out)
    _write((json.dumps(out) + "\n").encode())


def _prepare():
    # What no run's request changes: the fake clock, seeded randomness,
    # an empty environment, the log writers and the import hook. No
    # script has run yet; none of this reads the run's limits.
    _fake_time()
    # The pure-Python datetime reads time.time(), which is now the fake
    # clock (the C _datetime reads the host's clock directly).
    sys.modules["_datetime"] = None
    os.urandom = _urandom
    os.environ.clear()
    sys.stdout = _LogWriter("info", "stdout")
    sys.stderr = _LogWriter("error", "stderr")
    sys.__stdout__ = sys.stdout
    sys.__stderr__ = sys.stderr
    sys.meta_path.insert(0, _ConfigureOnImport)


def _go(limits, prepared=False):
    # The run: its descriptors are 0, 1 and 2 and limits its bounds (JSON
    # text). prepared says _prepare() and _confine() have run (a prepared
    # run of the zygote); else they run here, after the rlimits.
    global _LIMITS, _MAX_LINE, _MAX_TEXT
    _protocol_fds()
    _LIMITS = json.loads(limits)
    _MAX_LINE = _LIMITS["maxLine"]
    _MAX_TEXT = _LIMITS.get("maxText", 0)
    if _LIMITS.get("probe"):
        _probe()
        os._exit(0)
    _limits()
    if not prepared:
        if _LIMITS.get("packages"):
            _load_packages(_LIMITS["packages"])  # the zygote has, when prepared
        _confine()  # Landlock: confine.py, put before this file in the sandbox (landlock.go)
        _prepare()
    _configure_loaded()
    sys.path[:] = _LIMITS["path"]
    if _LIMITS["as"] > 0:
        resource.setrlimit(resource.RLIMIT_AS, (_LIMITS["as"], _LIMITS["as"]))
    try:
        _main()
    except MemoryError:
        _write(_MEMORY_ERROR if _started[0] else b"M\x00\x00\x00\x01s")
    os._exit(0)


if __name__ == "__main__":
    _go(sys.argv[1])
