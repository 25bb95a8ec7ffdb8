//go:build linux

package python

import (
	"bytes"
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are the system calls a script never needs and the
// sandbox refuses with EPERM: tracing and reading other processes,
// mounting and changing namespaces, the kernel's keyring, BPF and
// performance counters, kernel modules, rebooting and the clock, and
// creating a process (fork, vfork; clone is refused below unless it
// makes a thread). A name the running architecture does not have is
// left out when the filter is assembled.
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

// filterProgram returns the sandbox's seccomp filter as bubblewrap's
// --seccomp reads it: an array of struct sock_filter in native byte order.
// Everything not refused is allowed (the namespaces, the read-only root
// and the rlimits are the rest of the boundary):
//
//   - deniedSyscalls: EPERM.
//   - clone without CLONE_THREAD (a new process): EPERM; clone3, whose
//     flags a filter cannot read, ENOSYS, so that the C library falls back
//     to clone for threads.
//   - socket and socketpair outside AF_UNIX: EPERM. The network namespace
//     has no interface up anyway; AF_UNIX stays for asyncio's wake-up pair.
//   - ioctl TIOCSTI (pushing input into a terminal): EPERM.
func filterProgram() ([]byte, error) {
	names := make([]string, 0, len(deniedSyscalls))
	for _, n := range deniedSyscalls {
		if syscallExists(n) {
			names = append(names, n)
		}
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: seccomp.ActionErrno},
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: unix.CLONE_THREAD}}},
					{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
					{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
					{Name: "ioctl", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: unix.TIOCSTI}}},
				},
				Action: seccomp.ActionErrno,
			},
		},
	}
	insns, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("python: assembling the seccomp filter: %w", err)
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

// syscallExists reports whether the running architecture has the system
// call name, by assembling a one-call policy.
func syscallExists(name string) bool {
	p := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{{Names: []string{name}, Action: seccomp.ActionErrno}}}
	_, err := p.Assemble()
	return err == nil
}

// assembleBPF turns instructions into the kernel's sock_filter layout.
func assembleBPF(insns []bpf.Instruction) ([]bpf.RawInstruction, error) {
	return bpf.Assemble(insns)
}
