//go:build linux

package python

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// clone is a copy of b with a zygote of its own (started when first
// needed, from the copy's layout, program and filter), ended with t's
// cleanup (t may be nil).
func clone(t *testing.T, b *Backend) *Backend {
	c := *b
	lay := *b.lay
	c.lay = &lay
	c.zygotes = &zygotes{refused: b.zygotes.refused}
	if t != nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return &c
}

// zygoteProcesses are the processes of b's zygote in service, if it has
// one: its bubblewrap, bubblewrap's init and the zygote.
func zygoteProcesses(b *Backend) []int {
	b.zygotes.mu.Lock()
	z := b.zygotes.cur
	b.zygotes.mu.Unlock()
	if z == nil || !z.usable() {
		return nil
	}
	out := []int{z.cmd.Process.Pid, z.pid}
	if init := parentOf(z.pid); init > 0 {
		out = append(out, init)
	}
	return out
}

// parentOf reads pid's parent from /proc, 0 if it cannot.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	var state string
	var ppid int
	if i < 0 || sscan(b[i+1:], &state, &ppid) != nil {
		return 0
	}
	return ppid
}
