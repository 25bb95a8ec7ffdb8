//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Version is a cgroup hierarchy's version.
type Version int

// The versions.
const (
	// V1 is cgroup v1: a memory hierarchy and a pids hierarchy.
	V1 Version = iota + 1
	// V2 is the unified hierarchy with the memory and pids controllers.
	V2
)

// String returns "v1" or "v2".
func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return fmt.Sprintf("Version(%d)", int(v))
}

// Options choose the hierarchy. A nil *Options means defaults.
type Options struct {
	// Version is the hierarchy to use. Zero means v2 where it has the
	// memory and pids controllers for this process, else v1.
	Version Version
}

// Manager creates groups under one parent (per hierarchy): the
// process's own group on v1 and in a v2 root, the parent of its own
// group in a delegated v2 subtree. It is safe for concurrent use.
type Manager struct {
	version Version
	// parents: v2 {unified}; v1 {memory, pids}.
	parents []string
	prefix  string
	seq     atomic.Uint64
	mounts  map[string]mount // the hierarchies, as Open found them
}

// Version is the hierarchy m creates groups in.
func (m *Manager) Version() Version { return m.version }

// Parents are the directories m creates groups in: one on v2, the
// memory hierarchy's then the pids hierarchy's on v1.
func (m *Manager) Parents() []string { return append([]string(nil), m.parents...) }

// Default is Open(nil), computed once per process: whether this process
// may create groups does not change while it runs.
func Default() (*Manager, error) { return openDefault() }

var openDefault = sync.OnceValues(func() (*Manager, error) { return Open(nil) })

// Open finds where this process may create groups, creating and
// removing one to be sure, and removes the groups of processes that
// ended without removing theirs. Its error says why it may not: no hierarchy
// with the memory and pids controllers, or no permission (not root, and
// not inside a delegated subtree).
func Open(opts *Options) (*Manager, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	own, err := readOwn("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var errs []error
	if o.Version == 0 || o.Version == V2 {
		m, err := openV2(mounts, own)
		if err == nil {
			return m, nil
		}
		errs = append(errs, err)
	}
	if o.Version == 0 || o.Version == V1 {
		m, err := openV1(mounts, own)
		if err == nil {
			return m, nil
		}
		errs = append(errs, err)
	}
	switch len(errs) {
	case 0:
		return nil, fmt.Errorf("cgroup: unknown version %d", int(o.Version))
	case 1:
		return nil, errs[0]
	}
	// One line, for a table of what is missing: v2's reason, then v1's.
	return nil, fmt.Errorf("%w; %w", errs[0], errs[1])
}

func newManager(v Version, mounts map[string]mount, parents ...string) *Manager {
	return &Manager{version: v, parents: parents, prefix: fmt.Sprintf("sandbank-%d-", os.Getpid()), mounts: mounts}
}

// sweep removes the groups a process that has ended left behind (it died
// before removing them), killing what is left in them: groups named
// sandbank-PID-… whose PID no longer exists. A live process's groups,
// whoever it is, are left alone.
func (m *Manager) sweep() {
	for _, p := range m.parents {
		found, _ := filepath.Glob(filepath.Join(p, "sandbank-*-*"))
		for _, d := range found {
			pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), "sandbank-"), "-", 2)[0])
			if err != nil || pid <= 0 || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
				continue
			}
			killAll(d)
			_ = unix.Rmdir(d)
		}
	}
}

// openV2 uses the unified hierarchy: the process's own group when it is
// the root (which may hold processes and children at once), else the
// parent of its own group, which must let this process create children
// with the memory and pids controllers.
func openV2(mounts map[string]mount, own map[string]string) (*Manager, error) {
	mnt, ok := mounts[""]
	if !ok {
		return nil, errors.New("cgroup: no v2 (unified) hierarchy is mounted")
	}
	path, ok := own[""]
	if !ok {
		return nil, errors.New("cgroup: this process has no v2 group")
	}
	dir := mnt.dir(path)
	if rel, _ := filepath.Rel(mnt.point, dir); rel != "." {
		// A group that is not the root holds this process, so it may not
		// also have children with controllers: its parent is the one.
		dir = filepath.Dir(dir)
	}
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: v2: %w", err)
	}
	for _, c := range []string{"memory", "pids"} {
		if !hasWord(ctl, c) {
			return nil, fmt.Errorf("cgroup: v2: the %s controller is not available in %s (cgroup.controllers: %q)", c, dir, strings.TrimSpace(string(ctl)))
		}
	}
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: v2: %w", err)
	}
	if !hasWord(sub, "memory") || !hasWord(sub, "pids") {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
			return nil, fmt.Errorf("cgroup: v2: enabling memory and pids for the children of %s: %w (a delegated subtree must not hold processes itself: with systemd, Delegate=yes and DelegateSubgroup=)", dir, err)
		}
	}
	m := newManager(V2, mounts, dir)
	if err := m.probe(); err != nil {
		return nil, err
	}
	m.sweep()
	return m, nil
}

// openV1 uses the v1 memory and pids hierarchies, creating groups under
// this process's own group in each.
func openV1(mounts map[string]mount, own map[string]string) (*Manager, error) {
	var parents []string
	for _, c := range []string{"memory", "pids"} {
		mnt, ok := mounts[c]
		if !ok {
			return nil, fmt.Errorf("cgroup: v1: no %s hierarchy is mounted", c)
		}
		path, ok := own[c]
		if !ok {
			return nil, fmt.Errorf("cgroup: v1: this process has no %s group", c)
		}
		parents = append(parents, mnt.dir(path))
	}
	m := newManager(V1, mounts, parents...)
	if err := m.probe(); err != nil {
		return nil, err
	}
	m.sweep()
	return m, nil
}

// probe creates and removes one group.
func (m *Manager) probe() error {
	name := m.prefix + "probe"
	for i, p := range m.parents {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			for _, q := range m.parents[:i] {
				_ = os.Remove(filepath.Join(q, name))
			}
			return fmt.Errorf("cgroup: %s: this process may not create a group in %s: %w (run as root, or inside a delegated subtree: a systemd unit with Delegate=yes)", m.version, p, err)
		}
	}
	for _, p := range m.parents {
		_ = os.Remove(filepath.Join(p, name))
	}
	return nil
}

// Groups lists the directories of the groups m created that exist:
// none once every run's group has been removed.
func (m *Manager) Groups() []string {
	var out []string
	for _, p := range m.parents {
		found, _ := filepath.Glob(filepath.Join(p, m.prefix+"*"))
		out = append(out, found...)
	}
	return out
}

// Limits are a group's bounds. Zero means no bound.
type Limits struct {
	// MemoryBytes bounds the memory the group's processes cause the
	// kernel to hold, kernel memory included; no swap is allowed.
	MemoryBytes int64
	// Tasks bounds the group's tasks (pids.max): threads and processes.
	Tasks int64
}

// Group is one run's group. Place the run's process in it with Start,
// read what happened with MemoryEvents, and Remove it when the run has
// ended.
type Group struct {
	m    *Manager
	dirs []string // v2 {dir}; v1 {memory dir, pids dir}
	once sync.Once
	err  error
}

// New creates a group with the limits.
func (m *Manager) New(l Limits) (*Group, error) {
	name := m.prefix + strconv.FormatUint(m.seq.Add(1), 10)
	g := &Group{m: m}
	for _, p := range m.parents {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("cgroup: creating %s: %w", d, err)
		}
		g.dirs = append(g.dirs, d)
	}
	if err := g.limit(l); err != nil {
		_ = g.Remove()
		return nil, err
	}
	return g, nil
}

func (g *Group) memDir() string  { return g.dirs[0] }
func (g *Group) pidsDir() string { return g.dirs[len(g.dirs)-1] }

func (g *Group) limit(l Limits) error {
	var writes [][2]string // file, value; a missing optional file is skipped
	var optional = map[string]bool{}
	mem := g.memDir()
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if g.m.version == V2 {
			writes = append(writes, [2]string{filepath.Join(mem, "memory.max"), v},
				[2]string{filepath.Join(mem, "memory.swap.max"), "0"},
				[2]string{filepath.Join(mem, "memory.oom.group"), "1"})
			optional[filepath.Join(mem, "memory.swap.max")] = true
		} else {
			// memsw (memory and swap together) after the memory limit, which
			// it may not be below.
			writes = append(writes, [2]string{filepath.Join(mem, "memory.limit_in_bytes"), v},
				[2]string{filepath.Join(mem, "memory.memsw.limit_in_bytes"), v})
			optional[filepath.Join(mem, "memory.memsw.limit_in_bytes")] = true
		}
	}
	if l.Tasks > 0 {
		writes = append(writes, [2]string{filepath.Join(g.pidsDir(), "pids.max"), strconv.FormatInt(l.Tasks, 10)})
	}
	for _, w := range writes {
		if err := os.WriteFile(w[0], []byte(w[1]), 0); err != nil {
			if optional[w[0]] && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return fmt.Errorf("cgroup: setting %s: %w", w[0], err)
		}
	}
	return nil
}

// Start starts cmd with its process in the group, so that the process
// and everything it starts are bounded from their first instruction. On
// v2 the kernel places the child (CLONE_INTO_CGROUP, cmd.SysProcAttr's
// UseCgroupFD); on v1 the child is forked from a thread of this process
// moved into the group for the fork, and moved back after it.
func (g *Group) Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if g.m.version == V2 {
		fd, err := unix.Open(g.dirs[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cgroup: opening %s: %w", g.dirs[0], err)
		}
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() {
		// A new goroutine on a locked thread: if the thread cannot be
		// moved back, the goroutine exits still locked and the runtime
		// ends the thread, instead of a caller's goroutine running on in a
		// run's group.
		runtime.LockOSThread()
		tid := strconv.Itoa(unix.Gettid())
		home, err := readOwn("/proc/thread-self/cgroup")
		if err != nil {
			done <- err
			return
		}
		mounts := g.m.mounts
		back := []string{mounts["memory"].dir(home["memory"]), mounts["pids"].dir(home["pids"])}
		for _, d := range g.dirs {
			if err := os.WriteFile(filepath.Join(d, "tasks"), []byte(tid), 0); err != nil {
				moveTo(back, tid)
				done <- fmt.Errorf("cgroup: moving a thread into %s: %w", d, err)
				return
			}
		}
		err = cmd.Start()
		if moveTo(back, tid) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// Place moves the process pid (all its threads) into the group. A
// caller that places a process it did not start here must keep it from
// running anything the group should bound until Place returns.
func (g *Group) Place(pid int) error {
	for _, d := range g.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup: moving a process into %s: %w", d, err)
		}
	}
	return nil
}

// JoinFiles opens the group's files through which a process moves
// itself into it, for a process the caller cannot start in the group:
// it writes "0" to each (v1's tasks files, one per hierarchy), then
// closes them. A process moving itself, single-threaded, skips the
// kernel's global lock that moving another process by its pid takes,
// whose first taking after an idle spell waits out an RCU grace period
// (5 to 15 ms here). The files are opened by this process, so the
// kernel checks this process's credentials, not the mover's. On v2 it
// returns none: a thread may not move itself alone between v2 groups,
// so Place moves the process. Check the move with Holds.
func (g *Group) JoinFiles() ([]*os.File, error) {
	if g.m.version == V2 {
		return nil, nil
	}
	var files []*os.File
	for _, d := range g.dirs {
		f, err := os.OpenFile(filepath.Join(d, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			for _, f := range files {
				_ = f.Close()
			}
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		files = append(files, f)
	}
	return files, nil
}

// Holds reports whether the process pid is in the group in every
// hierarchy, as the kernel lists the group's processes.
func (g *Group) Holds(pid int) bool {
	want := strconv.Itoa(pid)
	for _, d := range g.dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil || !slices.Contains(strings.Fields(string(b)), want) {
			return false
		}
	}
	return true
}

func moveTo(dirs []string, tid string) error {
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.WriteFile(filepath.Join(d, "tasks"), []byte(tid), 0))
	}
	return errors.Join(errs...)
}

// Events are what the kernel recorded of a group's memory and tasks.
type Events struct {
	// Max counts the times the memory usage reached the limit (v2
	// memory.events max; v1 memory.failcnt and memory.memsw.failcnt). Reaching it is not failing:
	// the kernel reclaims first.
	Max uint64
	// OOM counts the times the group ran out of memory (v2 memory.events
	// oom; v1: 1 while memory.oom_control's under_oom is set).
	OOM uint64
	// OOMKill counts the processes the kernel killed for the group's
	// memory limit (memory.events or memory.oom_control oom_kill). It is
	// the one count both versions keep for a run ended by its memory
	// limit: v1 kernels may leave failcnt at zero then.
	OOMKill uint64
	// PeakBytes is the highest memory usage seen (v2 memory.peak, v1
	// memory.max_usage_in_bytes); 0 where the kernel does not say.
	PeakBytes int64
	// TasksRefused counts the forks pids.max refused (pids.events max).
	TasksRefused uint64
}

// MemoryEvents reads the group's events. Read them once the run's
// processes have ended, before Remove.
func (g *Group) MemoryEvents() (Events, error) {
	var e Events
	mem := g.memDir()
	if g.m.version == V2 {
		kv, err := readKeyed(filepath.Join(mem, "memory.events"))
		if err != nil {
			return e, err
		}
		e.Max, e.OOM, e.OOMKill = kv["max"], kv["oom"], kv["oom_kill"]
		e.PeakBytes = readInt(filepath.Join(mem, "memory.peak"))
	} else {
		// The memory counter or, where swap is counted, the memory and
		// swap counter: whichever refused the charge.
		e.Max = uint64(max(readInt(filepath.Join(mem, "memory.failcnt")), 0) + max(readInt(filepath.Join(mem, "memory.memsw.failcnt")), 0))
		kv, err := readKeyed(filepath.Join(mem, "memory.oom_control"))
		if err != nil {
			return e, err
		}
		e.OOM, e.OOMKill = kv["under_oom"], kv["oom_kill"]
		e.PeakBytes = readInt(filepath.Join(mem, "memory.max_usage_in_bytes"))
	}
	if kv, err := readKeyed(filepath.Join(g.pidsDir(), "pids.events")); err == nil {
		e.TasksRefused = kv["max"]
	}
	return e, nil
}

// OOMKilled reports whether the kernel killed a process of the group
// for its memory limit (or the group ran out of memory): the memory
// limit, as observed from outside the run.
func (g *Group) OOMKilled() bool {
	e, err := g.MemoryEvents()
	return err == nil && (e.OOMKill > 0 || e.OOM > 0)
}

// removeWait bounds how long Remove waits for killed processes to end.
const removeWait = time.Minute

// Remove kills every process left in the group and removes it. It is
// idempotent.
func (g *Group) Remove() error {
	g.once.Do(func() { g.err = g.remove() })
	return g.err
}

func (g *Group) remove() error {
	if len(g.dirs) == 0 {
		return nil
	}
	if g.m.version == V2 {
		// cgroup.kill (5.14) kills the whole group at once.
		_ = os.WriteFile(filepath.Join(g.dirs[0], "cgroup.kill"), []byte("1"), 0)
	}
	deadline := time.Now().Add(removeWait)
	pause := time.Millisecond
	left := append([]string(nil), g.dirs...)
	for {
		var busy []string
		for _, d := range left {
			killAll(d)
			err := unix.Rmdir(d)
			switch {
			case err == nil, errors.Is(err, unix.ENOENT):
			case errors.Is(err, unix.EBUSY):
				busy = append(busy, d)
			default:
				return fmt.Errorf("cgroup: removing %s: %w", d, err)
			}
		}
		if len(busy) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %s still holds processes after %v", busy[0], removeWait)
		}
		// Killed processes end asynchronously, with no event to wait on
		// that both versions have.
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
		left = busy
	}
}

// killAll sends SIGKILL to every process in the group dir.
func killAll(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// Dirs are the group's directories: one on v2; the memory group's then
// the pids group's on v1.
func (g *Group) Dirs() []string { return append([]string(nil), g.dirs...) }

// mount is one mounted hierarchy.
type mount struct {
	point string // where it is mounted
	root  string // the group at its root (not "/" inside a cgroup namespace or a bind mount)
}

// dir is the directory of the group at path (as /proc/self/cgroup names it).
func (m mount) dir(path string) string {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	return filepath.Join(m.point, rel)
}

// readMounts finds the hierarchies in /proc/self/mountinfo: "" is v2's,
// "memory" and "pids" v1's.
func readMounts() (map[string]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	out := map[string]mount{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		m := mount{point: unescape(a[4]), root: unescape(a[3])}
		switch b[0] {
		case "cgroup2":
			if _, ok := out[""]; !ok {
				out[""] = m
			}
		case "cgroup":
			for _, opt := range strings.Split(b[2], ",") {
				if opt == "memory" || opt == "pids" {
					if _, ok := out[opt]; !ok {
						out[opt] = m
					}
				}
			}
		}
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 is a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readOwn reads a /proc/…/cgroup file: the group of each v1 controller,
// and "" for v2.
func readOwn(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

func hasWord(b []byte, w string) bool {
	for _, f := range bytes.Fields(b) {
		if string(f) == w {
			return true
		}
	}
	return false
}

// readKeyed reads a flat keyed file ("key value" lines).
func readKeyed(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// readInt reads a file holding one integer; 0 when it cannot.
func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}
