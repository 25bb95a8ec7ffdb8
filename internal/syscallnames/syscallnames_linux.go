// Package syscallnames keeps, of a list of system call names, those the
// running architecture has, as github.com/elastic/go-seccomp-bpf names
// them: a seccomp allow-list is written once for every architecture
// (the legacy open, stat, pipe… exist on amd64, not on arm64), and
// go-seccomp-bpf refuses to assemble a policy with a name it does not
// know. The python engine's filter and the native Starlark guest's use it.
package syscallnames

import seccomp "github.com/elastic/go-seccomp-bpf"

// Existing returns the names the running architecture has, in order.
func Existing(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if exists(n) {
			out = append(out, n)
		}
	}
	return out
}

// exists reports whether the running architecture has the system call
// name, by assembling a one-call policy.
func exists(name string) bool {
	p := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{{Names: []string{name}, Action: seccomp.ActionErrno}}}
	_, err := p.Assemble()
	return err == nil
}
