//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/internal/syscallnames"
)

// confine is what the native guest does to itself before it reads any
// byte of a run, on top of the namespaces the host started it in (new
// pid, mount, ipc, uts and network namespaces; a new user namespace, or
// the nobody user when the host is root): every inherited file
// descriptor past stdio closed, resource limits, no capabilities, no new
// privileges, Landlock with no filesystem and no network access, and a
// seccomp allow-list of the calls the Go runtime and the interpreter
// make. It returns the address space the process holds so far, the base
// of its RLIMIT_AS (limitAddressSpace).
func confine() (base int64, err error) {
	if err := unix.CloseRange(3, ^uint(0), 0); err != nil {
		return 0, fmt.Errorf("closing inherited descriptors: %w", err)
	}
	base, err = addressSpace()
	if err != nil {
		return 0, err
	}
	for _, l := range []struct {
		res int
		max uint64
	}{
		{unix.RLIMIT_NOFILE, 16},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_FSIZE, 0},
		{unix.RLIMIT_MEMLOCK, 0},
		{unix.RLIMIT_MSGQUEUE, 0},
		{unix.RLIMIT_NPROC, 256},
	} {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.max, Max: l.max}); err != nil {
			return 0, fmt.Errorf("rlimit %d: %w", l.res, err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return 0, err
	}
	// No filesystem access, no TCP bind or connect, no signals or
	// abstract sockets outside the process: no rule grants anything.
	// Where the kernel lacks Landlock (or some of its versions), the
	// namespaces and the seccomp filter still hold.
	if err := landlock.V10.BestEffort().Restrict(); err != nil {
		return 0, fmt.Errorf("landlock: %w", err)
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionErrno, // EPERM
		Syscalls: []seccomp.SyscallGroup{
			{Names: syscallnames.Existing(allowedSyscalls), Action: seccomp.ActionAllow},
			// Last: go-seccomp-bpf leaves an argument in the accumulator
			// once a condition fails, so no rule may follow one.
			{NamesWithCondtions: []seccomp.NameWithConditions{{
				Name:       "clone",
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_THREAD}},
			}}, Action: seccomp.ActionAllow},
		},
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: policy}); err != nil {
		return 0, fmt.Errorf("seccomp: %w", err)
	}
	return base, nil
}

// allowedSyscalls are the calls the Go runtime makes once the guest runs
// (memory, threads, signals for preemption, futexes, the clock, stdio)
// and setrlimit for the guest's own address-space limit. Everything
// else, clone without CLONE_THREAD (a new process) included, fails with
// EPERM: no file can be opened, no socket made, no program executed.
var allowedSyscalls = []string{
	"read", "write", "readv", "writev", "close", "fcntl", "fstat", "newfstatat",
	"mmap", "munmap", "madvise", "mprotect", "mremap", "brk",
	"futex", "exit", "exit_group", "gettid", "getpid", "tgkill", "tkill",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
	"sched_yield", "sched_getaffinity", "nanosleep", "clock_gettime", "clock_nanosleep", "gettimeofday",
	"epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_wait", "pipe2", "eventfd2",
	"getrandom", "getrlimit", "setrlimit", "prlimit64",
}

// dropCapabilities sets no new privileges and empties every thread's
// capability sets (a child in a user namespace of its own holds every
// capability in it). The bounding and ambient sets only matter at an
// execve, which the seccomp filter refuses; clearing them would cost a
// stop of every thread per capability (three milliseconds of a child's
// start).
func dropCapabilities() error {
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

// addressSpace is the virtual memory the process holds (/proc/self/statm's
// size), read before Landlock closes the filesystem, with plain system
// calls: an os.File would start the Go runtime's poller, whose
// descriptors would then stay open.
func addressSpace() (int64, error) {
	fd, err := unix.Open("/proc/self/statm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	defer unix.Close(fd)
	var buf [128]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	f := strings.Fields(string(buf[:max(n, 0)]))
	if len(f) == 0 {
		return 0, errors.New("empty /proc/self/statm")
	}
	pages, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// asSlack is RLIMIT_AS's room above the booted process and twice the
// run's memory limit: the Go runtime reserves address space in large
// steps (heap arenas, goroutine stacks) that it never touches. The bound
// is a backstop; the run's cgroup is the memory limit.
const asSlack = 512 << 20

// limitAddressSpace lowers RLIMIT_AS to base + 2 × memoryBytes + asSlack.
func limitAddressSpace(base, memoryBytes int64) error {
	n := uint64(base + 2*memoryBytes + asSlack)
	return unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: n, Max: n})
}
