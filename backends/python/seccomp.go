//go:build linux

package python

import (
	"bytes"
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/internal/syscallnames"
)

// allowedSyscalls are the system calls CPython and its standard library
// make, found by tracing the conformance kit, the fixtures, this
// package's tests and the bench workloads under strace, and completed
// with what the os, socket, select, signal, mmap, shutil, tempfile and
// threading modules call for. Everything else is refused with ENOSYS (a
// Python OSError, "Function not implemented"), which the C library reads
// as "fall back to the older call". A name the running architecture does
// not have (the legacy open, stat, pipe… on arm64) is left out.
//
// Left out on purpose, though harmless inside the namespaces, because
// the standard library never calls them: System V IPC and POSIX message
// queues (shmget, msgget, semget, mq_open: kernel-held memory), inotify,
// asynchronous I/O, io_uring, sync and syncfs (which flush the host's
// file systems), execveat, the set*id calls, and the scheduler's setters
// beyond sched_yield and setpriority. And sysinfo, which tells the host's
// uptime, load averages and process count: the C library calls it only
// for sysconf's physical and available pages (os.sysconf
// "SC_PHYS_PAGES"), which then read nothing of the host.
var allowedSyscalls = []string{
	// The exec of the interpreter itself: bubblewrap installs the filter
	// before it. Landlock (confine.py) refuses every later exec.
	"execve",
	// Memory.
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "memfd_create",
	// Files, in the sandbox's read-only root and its private /tmp.
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
	"open", "openat", "creat", "close", "close_range", "lseek", "dup", "dup2", "dup3", "fcntl", "flock",
	"stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat", "faccessat2",
	"readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir",
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2",
	"link", "linkat", "symlink", "symlinkat", "mknod", "mknodat",
	"chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "umask",
	"truncate", "ftruncate", "fallocate", "fadvise64", "fsync", "fdatasync",
	"utime", "utimes", "futimesat", "utimensat",
	"getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
	"sendfile", "copy_file_range", "splice", "tee",
	"pipe", "pipe2", "ioctl",
	// Waiting.
	"select", "pselect6", "poll", "ppoll", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
	"epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "futex", "futex_waitv",
	// Time (the runner fakes the clock; the calls themselves are harmless).
	"clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "times",
	"getitimer", "setitimer", "alarm", "timerfd_create", "timerfd_settime", "timerfd_gettime",
	// Signals, within the run's pid namespace.
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait",
	"rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "signalfd", "signalfd4", "pause",
	"kill", "tgkill", "tkill", "restart_syscall",
	// The process and its threads (clone only for a thread: below).
	"clone", "exit", "exit_group", "wait4", "waitid", "set_tid_address", "set_robust_list", "rseq",
	"arch_prctl", "prctl", "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
	"sched_get_priority_max", "sched_get_priority_min", "getpriority", "setpriority",
	"getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getgroups",
	"getresuid", "getresgid", "getpgid", "getpgrp", "getsid", "setsid", "setpgid", "capget",
	"getrlimit", "setrlimit", "prlimit64", "getrusage", "uname", "getrandom", "getcpu",
	// Sockets: AF_UNIX only (below).
	"socket", "socketpair", "bind", "connect", "listen", "accept", "accept4", "shutdown",
	"sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
	"getsockname", "getpeername", "getsockopt", "setsockopt",
	// Landlock: the runner confines itself (confine.py); a script may
	// only confine itself further.
	"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
}

// deniedSyscalls are refused with EPERM rather than ENOSYS, as they
// were when the filter was a deny-list: a script trying them is told
// "not permitted", not "not implemented". Tracing and reading other
// processes, mounting and changing namespaces, the kernel's keyring, BPF
// and performance counters, kernel modules, rebooting and the clock, and
// creating a process (fork, vfork; clone is refused below unless it
// makes a thread).
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "pidfd_open",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
	"fsconfig", "fspick", "mount_setattr", "unshare", "setns",
	"bpf", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "syslog", "settimeofday", "clock_settime", "clock_adjtime",
	"adjtimex", "iopl", "ioperm", "uselib", "personality", "vhangup", "lookup_dcookie",
	"open_by_handle_at", "name_to_handle_at", "fanotify_init",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"fork", "vfork",
}

// refusedNotListed is the filter's action for a call in no list.
const refusedNotListed = seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)

// filterProgram returns the sandbox's seccomp filter as bubblewrap's
// --seccomp reads it: an array of struct sock_filter in native byte order.
// The first rule that matches decides:
//
//   - a call of another architecture (or x86_64's x32 ABI): ENOSYS, so
//     that no list can be bypassed through another system call table.
//   - deniedSyscalls: EPERM.
//   - clone without CLONE_THREAD (a new process): EPERM; clone3, whose
//     flags a filter cannot read, ENOSYS, so that the C library falls back
//     to clone for threads.
//   - socket and socketpair outside AF_UNIX: EPERM. The network namespace
//     has no interface up anyway; AF_UNIX stays for asyncio's wake-up pair.
//   - ioctl TIOCSTI (pushing input into a terminal): EPERM.
//   - allowedSyscalls: allowed.
//   - anything else: ENOSYS.
func filterProgram() ([]byte, error) { return assembleFilter(refusedNotListed) }

// assembleFilter assembles the filter with notListed as the action for a
// call in no list. Assembled with seccomp.ActionLog, the kernel logs
// (dmesg, "audit: type=1326 … syscall=N") each call a workload makes
// that is not listed, and lets it through: how the list was checked
// against the test suite, the kit and the bench workloads
// (docs/RATIONALE.md, R27).
func assembleFilter(notListed seccomp.Action) ([]byte, error) {
	insns, err := filterInstructions(notListed)
	if err != nil {
		return nil, err
	}
	raw, err := assembleBPF(insns)
	if err != nil {
		return nil, fmt.Errorf("python: assembling the seccomp filter: %w", err)
	}
	var b bytes.Buffer
	for _, in := range raw {
		_ = binary.Write(&b, binary.NativeEndian, in)
	}
	return b.Bytes(), nil
}

// filterInstructions is the filter as BPF instructions.
func filterInstructions(notListed seccomp.Action) ([]bpf.Instruction, error) {
	// go-seccomp-bpf leaves an argument, not the call's number, in the
	// accumulator once a rule with conditions fails, so a rule after one
	// would compare the wrong value. The conditions are a program of
	// their own, whose final "allow" becomes the start of the list's
	// program (which loads the architecture and the number again).
	conditions := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{{
			NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: unix.CLONE_THREAD}}},
				{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
				{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
				{Name: "ioctl", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: unix.TIOCSTI}}},
			},
			Action: seccomp.ActionErrno,
		}},
	}
	// The list's default is set on the assembled program: the package
	// accepts no errno but EPERM there.
	lists := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: syscallnames.Existing(deniedSyscalls), Action: seccomp.ActionErrno},
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{Names: syscallnames.Existing(allowedSyscalls), Action: seccomp.ActionAllow},
		},
	}
	first, err := conditions.Assemble()
	if err != nil {
		return nil, fmt.Errorf("python: assembling the seccomp filter: %w", err)
	}
	last := len(first) - 1
	if ret, ok := first[last].(bpf.RetConstant); !ok || ret.Val != uint32(seccomp.ActionAllow) {
		return nil, fmt.Errorf("python: assembling the seccomp filter: the conditions' program does not end in allow")
	}
	second, err := lists.Assemble()
	if err != nil {
		return nil, fmt.Errorf("python: assembling the seccomp filter: %w", err)
	}
	end := len(second) - 1
	if ret, ok := second[end].(bpf.RetConstant); !ok || ret.Val != uint32(seccomp.ActionAllow) {
		return nil, fmt.Errorf("python: assembling the seccomp filter: the lists' program does not end in its default")
	}
	second[end] = bpf.RetConstant{Val: uint32(notListed)}
	return append(first[:last:last], second...), nil
}

// assembleBPF turns instructions into the kernel's sock_filter layout.
func assembleBPF(insns []bpf.Instruction) ([]bpf.RawInstruction, error) {
	return bpf.Assemble(insns)
}
