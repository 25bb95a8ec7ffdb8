//go:build linux

package python

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/spi"
)

// seccompData is the kernel's struct seccomp_data for one call, laid out
// for bpf.VM, whose 32-bit loads are big-endian where the kernel's are
// native: each 32-bit word is where the kernel has it, in big-endian.
func seccompData(auditArch uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		lo, hi := 16+8*i, 16+8*i+4
		if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian host
			lo, hi = hi, lo
		}
		binary.BigEndian.PutUint32(b[lo:], uint32(a))
		binary.BigEndian.PutUint32(b[hi:], uint32(a>>32))
	}
	return b
}

// TestFilterDecides runs the filter's program on calls, as the kernel
// would: the allow-list, its argument conditions, and the architecture.
func TestFilterDecides(t *testing.T) {
	insns, err := filterInstructions(refusedNotListed)
	require.NoError(t, err)
	vm, err := bpf.NewVM(insns)
	require.NoError(t, err)
	native, err := arch.GetInfo("")
	require.NoError(t, err)
	nr := func(name string) int {
		n, ok := native.SyscallNames[name]
		require.True(t, ok, name)
		return n
	}
	allow := uint32(seccomp.ActionAllow)
	eperm := uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
	enosys := uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
	id := uint32(native.ID)
	cases := []struct {
		name string
		data []byte
		want uint32
	}{
		{"read", seccompData(id, nr("read"), 0), allow},
		{"clone a thread", seccompData(id, nr("clone"), unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND), allow},
		{"clone a process", seccompData(id, nr("clone"), uint64(unix.SIGCHLD)), eperm},
		{"clone3", seccompData(id, nr("clone3")), enosys},
		{"socket AF_UNIX", seccompData(id, nr("socket"), unix.AF_UNIX), allow},
		{"socket AF_INET", seccompData(id, nr("socket"), unix.AF_INET), eperm},
		{"ioctl TCGETS", seccompData(id, nr("ioctl"), 0, unix.TCGETS), allow},
		{"ioctl TIOCSTI", seccompData(id, nr("ioctl"), 0, unix.TIOCSTI), eperm},
		{"mount", seccompData(id, nr("mount")), eperm},
		{"shmget (not listed)", seccompData(id, nr("shmget")), enosys},
		{"sync (not listed)", seccompData(id, nr("sync")), enosys},
		{"sysinfo (not listed)", seccompData(id, nr("sysinfo")), enosys},
		{"read of another architecture", seccompData(uint32(arch.I386.ID), 3), enosys},
		{"a number no architecture has", seccompData(id, 4000), enosys},
	}
	if native.ID == arch.X86_64.ID {
		cases = append(cases, struct {
			name string
			data []byte
			want uint32
		}{"x32 read", seccompData(id, arch.X32.SeccompMask|0), enosys})
	}
	for _, c := range cases {
		got, err := vm.Run(c.data)
		require.NoError(t, err, c.name)
		assert.Equal(t, fmt.Sprintf("%#x", c.want), fmt.Sprintf("%#x", uint32(got)), c.name)
	}
}

// TestFilterRefusesWhatIsNotListed: a call the standard library never
// makes (System V shared memory, reached through ctypes) is refused with
// ENOSYS in the sandbox; with the deny-list the filter was (allow what
// is not denied), it went through.
func TestFilterRefusesWhatIsNotListed(t *testing.T) {
	b := backendOrSkip(t)
	script := []byte(fmt.Sprintf(`
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(%d, 0, 4096, 0o1600)
[r, ctypes.get_errno()]`, unix.SYS_SHMGET))
	run := func(b *Backend) string {
		out, err := b.Evaluate(context.Background(), spi.Request{Script: script, Input: json.RawMessage("null"),
			Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20}})
		require.NoError(t, err)
		require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
		return string(out.Value)
	}
	assert.Equal(t, fmt.Sprintf("[-1,%d]", unix.ENOSYS), run(b))

	denyList := clone(t, b)
	var err error
	denyList.filter, err = assembleFilter(seccomp.ActionAllow)
	require.NoError(t, err)
	assert.NotContains(t, run(denyList), "-1", "allowing what is not listed lets shmget through")
}

// TestSysinfoIsHidden: sysinfo(2), which tells the host's uptime, load
// averages and process count, is refused (ENOSYS) to a script that calls
// it through ctypes; what the C library derives from it (sysconf's
// physical pages) still answers without failing the run. Seen failing
// with sysinfo on the allow-list (the script read the host's uptime).
func TestSysinfoIsHidden(t *testing.T) {
	b := backendOrSkip(t)
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
info = ctypes.create_string_buffer(512)
r = libc.sysinfo(info)
pages = [os.sysconf(n) for n in ("SC_PHYS_PAGES", "SC_AVPHYS_PAGES")]
[r, ctypes.get_errno(), int.from_bytes(info.raw[:8], "little"), all(isinstance(p, int) for p in pages)]`),
		Input: json.RawMessage("null"), Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 64 << 20}})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	assert.Equal(t, fmt.Sprintf("[-1,%d,0,true]", unix.ENOSYS), string(out.Value), "sysinfo refused; its buffer untouched (the first field is the host's uptime)")
}
