//go:build linux

package python

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/internal/wasm/cache"
	"github.com/sandbank/sandbank/spi"
)

// This file is the check of the machine a backend runs on: the probe of
// the interpreter (layout.go), which finds what the sandbox must bind,
// and a self-test, one script run in the sandbox, which shows that the
// kernel allows every part of it. It runs once per process for each
// bubblewrap, interpreter and packages directory, under the context of
// the first Warm or Evaluate, and its findings are kept on disk
// (Options.CacheDir) for the next process, which then runs neither.

// machineKey names what is checked of the machine: bubblewrap, the
// interpreter and the packages directory, as the options give them.
type machineKey struct{ bwrap, python, sitePackages, packages string }

// machineCheck is one key's check in this process: the layout, once a
// self-test has passed with it; whether the zygote passed its self-test
// (zygote.go), and whether a sandbox of a run's own did.
type machineCheck struct {
	sem           chan struct{} // held while the check runs (one slot)
	probe         *probeResult  // the probe's report, once one passed
	lay           *layout
	zygoteChecked bool
	zygoteErr     error // why runs cannot be forked from a zygote here
	sandboxOK     bool
}

// machines holds the checks of this process, by key (*machineCheck).
var machines sync.Map

// machineRuns counts the probes and self-tests this process has run.
var machineRuns atomic.Int64

// readiness is a backend's own state of the check: whether b.lay is set.
type readiness struct {
	sem  chan struct{} // held while the backend's check runs (one slot)
	done atomic.Bool
}

// ready checks the machine for b once, under ctx: at b's first Warm or
// Evaluate. A check that failed runs again next time.
func (b *Backend) ready(ctx context.Context) error {
	if b.rd.done.Load() {
		return nil
	}
	select {
	case b.rd.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.rd.sem }()
	if b.rd.done.Load() {
		return nil
	}
	if err := b.checkMachine(ctx); err != nil {
		return err
	}
	b.rd.done.Store(true)
	return nil
}

// checkMachine probes the interpreter and runs the self-test, once per
// process for each bubblewrap, interpreter and packages directory: a
// check that passed is not run again (one that failed is, next time),
// and one that passed in an earlier process is read from the cache
// directory. With the zygote, the self-test runs on a zygote first
// (which b then keeps), and on a sandbox of its own only where the
// zygote fails it. It sets b.lay.
func (b *Backend) checkMachine(ctx context.Context) error {
	v, _ := machines.LoadOrStore(machineKey{b.bwrap, b.python, b.sitePackages, strings.Join(b.packages, " ")}, &machineCheck{sem: make(chan struct{}, 1)})
	c := v.(*machineCheck)
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.sem }()
	entry := b.cacheEntry()
	if c.lay == nil && entry != "" {
		c.load(b, entry)
	}
	switch {
	case c.lay != nil:
		lay := *c.lay // each backend its own
		b.lay = &lay
	case c.probe != nil:
		// Probed, but no self-test passed yet.
		lay, err := newLayout(*c.probe, b.sitePackages, b.packages)
		if err != nil {
			return err
		}
		b.lay = lay
	default:
		machineRuns.Add(1)
		spec, err := b.probeSpec() // packages.go
		if err != nil {
			return err
		}
		p, err := probeInterpreter(ctx, b.python, spec)
		if err != nil {
			return err
		}
		if b.lay, err = newLayout(p, b.sitePackages, b.packages); err != nil {
			return err
		}
		c.probe = &p
	}
	if b.useZygote {
		if !c.zygoteChecked {
			machineRuns.Add(1)
			err := b.zygoteSelfTest(ctx) // zygote.go
			if ctx.Err() != nil {
				return ctx.Err() // not the machine's answer
			}
			c.zygoteChecked, c.zygoteErr = true, err
			if err == nil {
				c.keep(b, entry)
			}
		}
		b.zygotes.mu.Lock()
		b.zygotes.refused = c.zygoteErr
		b.zygotes.mu.Unlock()
		if c.zygoteErr == nil {
			return nil
		}
	}
	if !c.sandboxOK {
		machineRuns.Add(1)
		if err := b.selfTest(ctx); err != nil {
			return err
		}
		c.sandboxOK = true
		c.keep(b, entry)
	}
	return nil
}

// keep stores b's layout as the key's, once a self-test has passed with
// it, and writes what this process found to the cache entry (when there
// is one: best effort, a cache that cannot be written only costs the
// next process a check).
func (c *machineCheck) keep(b *Backend, entry string) {
	if c.lay == nil {
		lay := *b.lay
		c.lay = &lay
	}
	if entry == "" || c.probe == nil {
		return
	}
	l := c.lay
	text, err := json.Marshal(machineEntry{Probe: *c.probe, Zygote: c.zygoteChecked && c.zygoteErr == nil, Sandbox: c.sandboxOK,
		Layout: &layoutEntry{Python: l.python, Version: l.version, Base: l.base, Path: l.path, Args: l.args, Packages: l.packages}})
	if err == nil {
		_ = cache.Write(b.cacheDir, entry, text)
	}
}

// machineEntry is what the cache keeps of a check that passed: the
// probe's report, and which self-tests passed with it.
type machineEntry struct {
	Probe   probeResult  `json:"probe"`
	Zygote  bool         `json:"zygote"`
	Sandbox bool         `json:"sandbox"`
	Layout  *layoutEntry `json:"layout"`
}

// layoutEntry is the layout made from the probe, kept so that a new
// process need not walk the library directories again (newLayout).
type layoutEntry struct {
	Python  string   `json:"python"`
	Version string   `json:"version"`
	Base    int64    `json:"base"`
	Path    []string `json:"path"`
	Args    []string `json:"args"`
	// Packages is the layout's packages spec (packages.go).
	Packages string `json:"packages,omitempty"`
}

// layout returns the kept layout when every path it binds is still
// there and every link it makes still leads where it did; nil if not.
func (e *layoutEntry) layout() *layout {
	if e == nil || e.Python == "" || len(e.Args) == 0 {
		return nil
	}
	for i := 0; i < len(e.Args); {
		if i+2 >= len(e.Args) {
			return nil
		}
		switch op, a, b := e.Args[i], e.Args[i+1], e.Args[i+2]; op {
		case "--ro-bind":
			if a != b && b != configMount { // packages.go
				return nil
			}
			if _, err := os.Lstat(a); err != nil {
				return nil
			}
		case "--symlink":
			if target, err := os.Readlink(b); err != nil || target != a {
				return nil
			}
		default:
			return nil
		}
		i += 3
	}
	return &layout{python: e.Python, version: e.Version, base: e.Base, path: e.Path, args: e.Args, packages: e.Packages}
}

// machineEntryMax bounds the entry read: the probe lists the files the
// interpreter maps (about a hundred paths).
const machineEntryMax = 1 << 20

// load reads the key's entry from the cache directory: the probe's
// report, the layout made from it, and the self-tests that passed with
// it. A layout whose files or links have changed is made again from the
// probe's report; an entry that is missing, damaged, or whose files are
// no longer there (no layout can be made from it) is ignored: the check
// runs.
func (c *machineCheck) load(b *Backend, entry string) {
	text, ok := cache.Read(b.cacheDir, entry)
	if !ok || len(text) > machineEntryMax {
		return
	}
	var e machineEntry
	if json.Unmarshal(text, &e) != nil || len(e.Probe.Version) < 2 || e.Probe.Executable == "" || !(e.Zygote || e.Sandbox) {
		return
	}
	lay := e.Layout.layout()
	if lay == nil {
		var err error
		if lay, err = newLayout(e.Probe, b.sitePackages, b.packages); err != nil {
			return
		}
	}
	c.probe, c.lay = &e.Probe, lay
	if e.Zygote {
		c.zygoteChecked, c.zygoteErr = true, nil
	}
	c.sandboxOK = e.Sandbox
}

// cacheEntry names b's entry in the cache directory, "" without one:
// a digest of the sandbox's programs and this build, bubblewrap's and
// the interpreter's paths and files (size, modification time, inode),
// the packages directory, the user and the kernel's release. Any of
// them changed, the name changes and the check runs again.
func (b *Backend) cacheEntry() string {
	if b.cacheDir == "" {
		return ""
	}
	parts := []string{fileID(b.bwrap), fileID(b.python), fileID(b.sitePackages), "uid=" + strconv.Itoa(os.Getuid()), "packages=" + strings.Join(b.packages, " ")}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		parts = append(parts, unix.ByteSliceToString(u.Release[:]))
	}
	return cache.Key("python-machine", []byte(sandboxSource+"\n"+zygoteSource), parts...)
}

// fileID names a file as it is now: its path, size, modification time,
// inode and device ("" for no path).
func fileID(path string) string {
	if path == "" {
		return ""
	}
	st, err := os.Stat(path)
	if err != nil {
		return path + " missing"
	}
	id := fmt.Sprintf("%s %d %d", path, st.Size(), st.ModTime().UnixNano())
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id += fmt.Sprintf(" %d %d", sys.Ino, sys.Dev)
	}
	return id
}

// selfTestTimeout bounds the check's run of one script in the sandbox.
const selfTestTimeout = 30 * time.Second

// selfTest runs one script in the sandbox: the kernel refuses a
// namespace or the filter there, if anywhere.
func (b *Backend) selfTest(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
	defer cancel()
	out, err := b.evaluate(ctx, spi.Request{
		Script: []byte("import os\n[os.getuid(), sorted(os.listdir('/')), 6 * 7]"),
		Input:  json.RawMessage(`null`),
		Limits: spi.Limits{WallClock: selfTestTimeout, MemoryBytes: 64 << 20},
	})
	if err != nil {
		return fmt.Errorf("python: the sandbox self-test failed: %w", err)
	}
	want := `[` + sandboxUID + `,["lib","lib64","usr"],42]`
	if out.Kind != spi.KindOK {
		// out.Message is the runner's or bubblewrap's own reason ("python:
		// the sandbox did not start: bwrap: No permissions to create a new
		// namespace…").
		return fmt.Errorf("%s (the backend runs one script in the sandbox: the kernel must allow user, pid, network, mount, ipc and uts namespaces and a seccomp filter)", strings.TrimSuffix(out.Message, "."))
	}
	if string(out.Value) != want && !selfTestRootOK(out.Value) {
		return fmt.Errorf("python: the sandbox self-test answered %.200s", out.Value)
	}
	return nil
}

// selfTestRootOK accepts a root listing other than the usual one (an
// interpreter under /opt, say), as long as the uid is the sandbox's and
// the arithmetic came back.
func selfTestRootOK(v json.RawMessage) bool {
	var got []json.RawMessage
	if json.Unmarshal(v, &got) != nil || len(got) != 3 {
		return false
	}
	return string(got[0]) == sandboxUID && string(got[2]) == "42"
}
