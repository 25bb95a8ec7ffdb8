# confine.py: Landlock for backends/python, embedded in the Go package and
# put before runner.py in the sandbox's program (landlock.go); the runner
# calls _confine() once, after its rlimits and before it reads the script.
# It defines names only: nothing runs when it is read.
#
# The run's own process restricts itself, and every thread and process
# it could make, for as long as it lives:
#
#   - files: read (files and directories) everywhere; read and write under
#     /tmp (the run's private tmpfs); execute nowhere (the interpreter is
#     already running: no later exec), no device nodes (ABI 1); no
#     linking or renaming a file into another directory's rights (ABI 2);
#     truncate only under /tmp (ABI 3); no ioctl on a device (ABI 5).
#   - network: no TCP bind or connect (ABI 4).
#   - scopes: no signal to a process outside the run's domain (bubblewrap's
#     init, another run) and no connection to an abstract UNIX socket made
#     outside it (ABI 6).
#
# A kernel without Landlock (or with it disabled) leaves the run as the
# namespaces, the read-only root and the seccomp filter make it; a kernel
# with an older ABI gets the rights that ABI knows. A kernel that has
# Landlock but refuses to apply it ends the run before the script starts
# (exit status 1, the reason on stderr: the host reports the sandbox did
# not start).


def _confine():
    import ctypes
    import os

    libc = ctypes.CDLL(None, use_errno=True)
    # The same numbers on every architecture (the unified table, 424+).
    create_ruleset, add_rule, restrict_self = 444, 445, 446
    abi = libc.syscall(create_ruleset, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return 0

    def fail(what):
        err = ctypes.get_errno()
        os.write(2, ("python: Landlock: %s failed: %s\n" % (what, os.strerror(err))).encode())
        os._exit(1)

    execute, write_file, read_file, read_dir = 1 << 0, 1 << 1, 1 << 2, 1 << 3
    remove_dir, remove_file, make_char, make_dir = 1 << 4, 1 << 5, 1 << 6, 1 << 7
    make_reg, make_sock, make_fifo, make_block, make_sym = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
    refer, truncate, ioctl_dev = 1 << 13, 1 << 14, 1 << 15
    handled = (1 << 13) - 1  # ABI 1: execute … make_sym
    if abi >= 2:
        handled |= refer
    if abi >= 3:
        handled |= truncate
    if abi >= 5:
        handled |= ioctl_dev
    read = read_file | read_dir
    scratch = read | write_file | remove_dir | remove_file | make_dir | make_reg | make_sock | make_fifo | make_sym
    scratch |= handled & (refer | truncate)

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    attr = RulesetAttr(handled, 0, 0)
    size = 8  # ABI 1-3: the file rights only
    if abi >= 4:
        attr.net = 1 | 2  # bind and connect TCP
        size = 16
    if abi >= 6:
        attr.scoped = 1 | 2  # abstract UNIX sockets, signals
        size = 24
    ruleset = libc.syscall(create_ruleset, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        fail("creating the ruleset")
    for path, allowed in (("/", read), ("/tmp", scratch)):
        try:
            fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue  # no /tmp: the run has no scratch directory
        rule = PathBeneath(allowed & handled, fd)
        if libc.syscall(add_rule, ruleset, 1, ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            fail("adding the rule for " + path)
        os.close(fd)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        fail("no_new_privs")
    if libc.syscall(restrict_self, ruleset, ctypes.c_uint32(0)) != 0:
        fail("restricting the process")
    os.close(ruleset)
    return abi
