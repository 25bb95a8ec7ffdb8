# zygote.py: the zygote of backends/python, embedded in the Go package
# and run as `python3 -S -s -B -c ZYGOTE PROGRAM SCRATCH SPARES PRELOAD NET TAG [PACKAGES]` in
# one bubblewrap sandbox per backend (zygote.go), with CAP_SYS_ADMIN in
# the sandbox's user namespace only. PROGRAM is what a run executes
# (confine.py and runner.py: landlock.go); SCRATCH the size of a run's
# /tmp in bytes (0: none); SPARES how many runs to keep prepared; PRELOAD
# the modules to import while idle (names separated by spaces); NET
# "shared" when runs share the zygote's network namespace (empty, made
# by bubblewrap) instead of each making its own, which the host asks only
# where Landlock scopes abstract UNIX sockets (ABI 6 or later: a run
# confined with less ends before its request); TAG names the backend's
# processes for its tests.
#
# The zygote serves the host on fd 3, a SOCK_SEQPACKET socket:
#
#   host -> zygote   one message per run: the run's number (8 bytes,
#                    big-endian), with four descriptors: the run's stdin,
#                    stdout, stderr and its go pipe (read end); then, on
#                    cgroup v1, the run's group's tasks files, to which
#                    the run's process writes "0" to join the group (a
#                    process moving itself skips a global lock).
#   zygote -> host   "Z" once, ready (the host reads the zygote's pid
#                    from the message's credentials). From each run's
#                    process: "R" + number once it has its request (the
#                    host reads its pid from the credentials, places it
#                    in the run's cgroup, and writes "g" and the runner's
#                    limits, JSON text, to the go pipe, which it then
#                    closes). From the zygote, once a run's process has
#                    ended: "E" + number + the exit code (4 bytes,
#                    signed: the code, or 128 plus the signal), the user
#                    and system CPU time in microseconds and the peak
#                    resident memory in KiB (8 bytes each) of the run's
#                    process, from wait4; and "F" + number + a reason,
#                    when no run could be prepared.
#
# A run is one fork, made ahead (SPARES of them wait for a request): the
# zygote (itself pid 1 of a pid namespace of its own: _own_pid_namespace)
# forks the run's process as pid 1 of a new pid namespace, which then
# makes its own mount and UTS namespaces (and network, unless NET is
# "shared"). The zygote waits for it (through a pidfd, in its loop) and
# reports what the kernel says of it. The run's process dies with the
# zygote, closes every descriptor of the zygote's but its channel to the
# host and its request socket, mounts a fresh tmpfs on /tmp, drops every
# capability, installs the seccomp filter, applies Landlock and prepares
# the runner (what depends on no run: PROGRAM's definitions are made
# once, in the zygote), then waits for its request (on a socket only it
# and the zygote hold). Then it joins its cgroup, tells the host its
# pid, waits for the go, takes the run's descriptors as 0, 1 and 2,
# closes every other, and starts the runner, which sets the rlimits and
# reads the script. Nothing of a run is in the zygote: it only forks,
# hands requests over and waits, and never reads what a run writes.
#
# The zygote says it is ready as soon as it can prepare a run; it
# imports the standard library's common modules (PRELOAD) while no
# request waits, one at a time, so that the first run does not wait for
# them (the runs prepared before then import what they use).
import sys
import os

import ctypes
import gc
import json
import resource
import select
import signal
import socket
import _thread
import _ast
import builtins
import io
import time

# The modules the runner configures as they are imported (logging,
# asyncio, random, uuid) or replaces (datetime by the pure-Python module
# reading its fake clock): the zygote must not have imported them.
_CONFIGURED = ("logging", "asyncio", "random", "uuid", "datetime", "_datetime", "tempfile")


def _configured_imported():
    return [n for n in _CONFIGURED if n in sys.modules]


if _configured_imported():
    os.write(2, ("python: the zygote imported %s\n" % _configured_imported()).encode())
    os._exit(1)


def _preload(name):
    # Imports name, unless that brings in a module of _CONFIGURED: then
    # every module the import added is forgotten, and runs import name
    # themselves.
    before = set(sys.modules)
    had = set(_configured_imported())
    try:
        __import__(name)
    except Exception:
        pass
    if set(_configured_imported()) - had:
        for n in set(sys.modules) - before:
            del sys.modules[n]


_PROGRAM = compile(sys.argv[1], "<runner>", "exec")
_SCRATCH = int(sys.argv[2])
# _SPARES runs are prepared ahead (forked, their namespaces and /tmp
# made), each waiting for its request on a socket of its own.
_SPARES = int(sys.argv[3])
# The standard library's common modules, imported once here so that a
# run does not: each unless its import brings in one of _CONFIGURED.
_PRELOAD = sys.argv[4].split()
# _SHARED_NET: runs share the zygote's network namespace. Making and
# tearing down one per run costs about 4.6 ms of CPU; what keeps runs
# apart in a shared one is that the filter allows no socket but AF_UNIX
# and Landlock's scope refuses a connection or datagram to an abstract
# socket another run made (a path socket is in the run's own /tmp).
_SHARED_NET = sys.argv[5] == "shared"
# The allow-listed packages (packages.go), JSON, or empty for none:
# imported before the first run is prepared (runner.py's _load_packages).
_PACKAGES = sys.argv[7] if len(sys.argv) > 7 else ""
del sys.argv[1:]
# _FILTER is the seccomp filter each run installs (_serve reads it once).
_FILTER = b""
# _WATCHED are the forked processes not yet reaped, by pidfd; _POLL
# waits for them and for the host (poll: the zygote's descriptors may
# number past select's 1,024).
_WATCHED = {}
_POLL = select.poll()
# _RUNNER is PROGRAM's namespace (_serve runs it once).
_RUNNER = {"__name__": "__sandbank_runner__", "__builtins__": builtins}

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS, _CLONE_NEWUTS = 0x00020000, 0x04000000
_CLONE_NEWPID, _CLONE_NEWNET = 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 2, 4, 1 << 14, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_SET_SECCOMP = 1, 38, 47, 22


def _fail(what):
    raise OSError(ctypes.get_errno(), what + ": " + os.strerror(ctypes.get_errno()))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _spare(ctrl, req, zygote):
    # The run's process: pid 1 of a new pid namespace, forked by the
    # zygote. It makes its own mount and UTS namespaces (and network:
    # _SHARED_NET), and as a spare prepares what does not depend on the
    # run, then waits for the run's request.
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        _fail("prctl")
    if _dead(zygote):
        # The zygote died before the death signal was set.
        os._exit(1)
    _close_all_but(ctrl.fileno(), req.fileno())
    # The IPC namespace is the zygote's (bubblewrap's new one, holding no
    # object): the filter refuses every System V IPC and POSIX message
    # queue call, so there is nothing in it a run could make or name,
    # and making and tearing down one per run cost about 2.4 ms.
    flags = _CLONE_NEWNS | _CLONE_NEWUTS
    if not _SHARED_NET:
        flags |= _CLONE_NEWNET
    if _libc.unshare(flags) != 0:
        _fail("unshare")
    if _libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        _fail("making / private")
    if _SCRATCH > 0:
        opts = ("size=%d,mode=1777" % _SCRATCH).encode()
        if _libc.mount(b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV, opts) != 0:
            _fail("mounting /tmp")
        os.chdir("/tmp")
    else:
        os.chdir("/")
    # Nothing below needs a privilege: the process confines itself now,
    # before the run exists (every capability dropped, the seccomp
    # filter, Landlock), and prepares the runner (PROGRAM's definitions
    # and _prepare: the fake clock, the log writers, ...).
    if _libc.prctl(_PR_CAP_AMBIENT, 4, 0, 0, 0) != 0:  # PR_CAP_AMBIENT_CLEAR_ALL
        _fail("clearing ambient capabilities")
    hdr, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if _libc.capset(ctypes.byref(hdr), data) != 0:
        _fail("dropping capabilities")
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("no_new_privs")
    buf = ctypes.create_string_buffer(_FILTER, len(_FILTER))
    prog = _SockFprog(len(_FILTER) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if _libc.prctl(_PR_SET_SECCOMP, 2, ctypes.byref(prog), 0, 0) != 0:
        _fail("installing the seccomp filter")
    del buf, prog
    runner = _RUNNER
    if runner["_confine"]() < 6 and _SHARED_NET:
        # No scope for abstract sockets: this run could reach another's.
        raise OSError("runs share a network namespace without Landlock's scopes (ABI 6)")
    runner["_prepare"]()
    # The run: its number and its descriptors, then the files through
    # which it joins its cgroup (v1's tasks files, if any: the host
    # checks that it did, else moves it).
    msg, fds, _, _ = socket.recv_fds(req, 64, _MAX_FDS)
    if not 4 <= len(fds) <= _MAX_FDS or len(msg) != 8:
        os._exit(1)
    req.close()
    for fd in fds[4:]:
        try:
            os.write(fd, b"0")
        except OSError:
            pass
        os.close(fd)
    del fds[4:]
    ctrl.send(b"R" + msg)  # the host reads this process's pid from it
    # The go: "g" and the run's limits, which the host writes once it
    # has placed this process in the run's cgroup and measured its
    # address space, then closes.
    go = b""
    while len(go) < _GO_MAX:
        chunk = os.read(fds[3], _GO_MAX)
        if not chunk:
            break
        go += chunk
    if go[:1] != b"g" or len(go) >= _GO_MAX:
        os._exit(1)
    for i in range(3):
        os.dup2(fds[i], i)
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    sys.argv[:] = ["-c"]
    runner["_go"](go[1:].decode(), True)
    os._exit(0)


# _MAX_FDS: a request's descriptors, the run's four and at most two
# files to join its cgroup with (v1's memory and pids hierarchies).
_MAX_FDS = 6

# _GO_MAX bounds the go message (the host's: "g" and the limits' JSON).
_GO_MAX = 1 << 16


def _close_all_but(*keep):
    lo = 3
    for fd in sorted(keep):
        os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def _dead(fd):
    r, _, _ = select.select([fd], [], [], 0)
    return bool(r)


class _Run:
    # A forked run's process: its pid (0 once reaped), a pidfd the zygote
    # waits on (in _WATCHED while the process is not reaped), and the
    # socket its request goes through (a spare's), or its number (a
    # run's, once it has its request).
    def __init__(self, pid, req):
        self.pid, self.req, self.number = pid, req, None
        self.pidfd = os.pidfd_open(pid)
        _WATCHED[self.pidfd] = self
        _POLL.register(self.pidfd, select.POLLIN)


def _prepare(ctrl, zygote):
    # Forks a spare: the child is pid 1 of a new pid namespace. The
    # zygote's own children's namespace is set back to its own at once,
    # since unshare makes a new one only from there.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # What the zygote holds is out of the collector's sight in the run:
    # a collection there would write to every tracked object's header,
    # copying each page it is on into the run (gc.freeze is a list splice).
    gc.freeze()
    if _libc.unshare(_CLONE_NEWPID) != 0:
        _fail("unshare")
    try:
        pid = os.fork()
        if pid == 0:
            try:
                _spare(ctrl, theirs, zygote)
            except BaseException as e:
                try:
                    os.write(2, ("python: a run could not be prepared: %s\n" % e).encode())
                finally:
                    os._exit(1)
    finally:
        if _libc.setns(zygote, _CLONE_NEWPID) != 0:
            _fail("setns")
    theirs.close()
    return _Run(pid, ours)


def _reap(ctrl, run):
    # Waits for an ended run's process and reports it, if it had a run.
    _POLL.unregister(run.pidfd)
    del _WATCHED[run.pidfd]
    os.close(run.pidfd)
    _, status, ru = os.wait4(run.pid, 0)
    run.pid = 0
    if run.number is None:
        return  # a spare that never ran
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    report = code.to_bytes(4, "big", signed=True)
    for v in (int(ru.ru_utime * 1e6), int(ru.ru_stime * 1e6), ru.ru_maxrss):
        report += v.to_bytes(8, "big")
    ctrl.send(b"E" + run.number + report)


def _hand_over(ctrl, zygote, spares, msg, fds):
    # Gives the request to the oldest spare (another if it has died:
    # that one is reaped once it has ended); says so when no run could be
    # prepared.
    for _ in range(2):
        run = spares.pop(0) if spares else _prepare(ctrl, zygote)
        try:
            socket.send_fds(run.req, [msg], fds)
        except OSError:
            run.req.close()
            continue
        run.req.close()
        run.number = msg
        return
    ctrl.send(b"F" + msg + b"no run could be prepared")


def _own_pid_namespace():
    # Goes on in a child that is pid 1 of a new pid namespace, owned by
    # the zygote's own user namespace (bubblewrap's pid namespace is
    # owned by the one --disable-userns nests this one in), so that the
    # zygote may set its children's pid namespace back to its own after
    # making each run's (_prepare). The parent waits for it and ends with
    # it; the child dies with the parent.
    parent = os.pidfd_open(os.getpid())
    if _libc.unshare(_CLONE_NEWPID) != 0:
        _fail("unshare")
    pid = os.fork()
    if pid != 0:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        _fail("prctl")
    if _dead(parent):
        os._exit(1)
    os.close(parent)


def _serve():
    global _FILTER
    _own_pid_namespace()
    ctrl = socket.socket(fileno=3)
    # The filter bubblewrap would install, read once from fd 4.
    filt = b""
    while True:
        chunk = os.read(4, 65536)
        if not chunk:
            break
        filt += chunk
    os.close(4)
    _FILTER = filt
    # The zygote waits for its runs (through their pidfds) to report them;
    # a run's process checks this pidfd of the zygote's when it starts.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    zygote = os.pidfd_open(os.getpid())
    if _PACKAGES:
        # Before any run exists: each is a fork of an interpreter that
        # holds them (and configures what they imported: runner.py).
        ns = {"__name__": "__sandbank_packages__", "__builtins__": builtins}
        exec(_PROGRAM, ns)
        ns["_load_packages"](json.loads(_PACKAGES))
    # PROGRAM's definitions, made once here: each run has its own copy of
    # them, as of the fork, and none of them has run.
    exec(_PROGRAM, _RUNNER)
    _POLL.register(ctrl, select.POLLIN)
    spares = [_prepare(ctrl, zygote)]
    ctrl.send(b"Z")
    # Work for the zygote while no request waits: the common modules'
    # imports, one at a time, then the other spares.
    common = list(_PRELOAD)
    while True:
        # A spare that died unused stays in spares, reaped, until a
        # request finds it dead: a spare that cannot be prepared is not
        # forked again and again while the zygote is idle.
        idle = bool(common) or len(spares) < _SPARES
        ready = [fd for fd, _ in _POLL.poll(0 if idle else None)]
        if not ready:
            if common:
                _preload(common.pop(0))
            else:
                spares.append(_prepare(ctrl, zygote))
            continue
        if ctrl.fileno() in ready:
            msg, fds, _, _ = socket.recv_fds(ctrl, 64, _MAX_FDS)
            if not msg:
                os._exit(0)
            if not 4 <= len(fds) <= _MAX_FDS or len(msg) != 8:
                os._exit(1)
            _hand_over(ctrl, zygote, spares, msg, fds)
            for fd in fds:
                os.close(fd)
            if not spares:
                spares.append(_prepare(ctrl, zygote))
        for fd in ready:
            run = _WATCHED.get(fd)
            if run is not None:
                _reap(ctrl, run)


_serve()
