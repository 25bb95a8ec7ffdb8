//go:build linux

package python

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/internal/cgroup"
	"github.com/sandbank/sandbank/spi"
)

// This file is the zygote (zygote.py has its side): one bubblewrap
// sandbox per backend holding an interpreter with the standard library
// imported, which forks each run instead of starting bubblewrap and an
// interpreter for it. The zygote runs none of a run's code and reads
// nothing a run writes; each run's process (pid 1 of its own pid
// namespace, with its own mount and UTS namespaces and /tmp, its own
// network namespace unless Landlock scopes abstract sockets
// (Backend.sharesNet), the zygote's IPC namespace, which the filter
// leaves it no call to use, no capability, no descriptor but its three
// pipes, Landlock and the seccomp filter) cannot reach it. What the
// host believes of a run comes from the kernel: the run's pid, which
// the kernel writes in the credentials of the message its process sends
// before the script exists, and its exit status and resource usage from
// wait4, which the zygote (its parent, which never runs the script)
// reports. The zygote is replaced after zygoteRuns runs, and as soon as a
// run of it ends other than with its value, its thrown error or the
// host's own kill (its wall clock, its caller's context).

//go:embed zygote.py
var zygoteSource string

// zygoteRuns bounds the runs one zygote forks before it is replaced.
const zygoteRuns = 256

// zygoteSpares is how many runs a zygote keeps prepared (zygote.py's
// _SPARES, which the zygote's argument sets).
const zygoteSpares = 2

// zygotePreload are the standard library's common modules, which the
// zygote imports while no request waits, so that a run does not (the
// runs prepared before then import what they use). A module whose
// import brings in one the runner configures as it is imported
// (logging, asyncio, random, uuid, tempfile) or replaces (datetime, by
// the pure-Python module reading the fake clock) is forgotten again:
// each run imports it itself.
var zygotePreload = strings.Fields(`abc array base64 binascii bisect collections collections.abc contextlib copy csv
	dataclasses decimal difflib enum fnmatch fractions functools hashlib heapq hmac html inspect itertools keyword
	math numbers operator pathlib pprint re string struct textwrap types typing unicodedata warnings zlib`)

// cmpOrSlice returns s, or def when s is nil.
func cmpOrSlice(s, def []string) []string {
	if s == nil {
		return def
	}
	return s
}

// zygoteStartTimeout bounds the zygote's start (bubblewrap, the
// interpreter, the standard library's imports).
const zygoteStartTimeout = 30 * time.Second

// zygotes is a backend's zygote: the current one, started when first
// needed, and whether this machine can have one at all.
type zygotes struct {
	mu      sync.Mutex
	cur     *zygote
	refused error // the zygote cannot be had here: runs start their own sandbox
	closed  bool
	number  uint64 // runs sent, across zygotes
	only    bool   // the zygote's self-test: no run starts a sandbox of its own
	maxRuns int    // runs per zygote: zygoteRuns (tests: fewer)
	// standby takes over from a replaced zygote at once; started after
	// the first replacement, in the background.
	standby  *zygote
	starting bool // a standby is being started
	// movedByHost counts the runs the host moved into their group
	// itself: on v2, and a run that did not move itself on v1.
	movedByHost atomic.Uint64
}

// zygote is one zygote process and the runs it has forked.
type zygote struct {
	cmd     *exec.Cmd
	conn    *net.UnixConn
	pid     int // the zygote's pid, from its first message's credentials
	stderr  *boundedBuffer
	exited  chan struct{} // closed once bubblewrap has been waited for
	maxRuns int           // zygoteRuns (tests: fewer)
	// replaced starts the zygote's successor, off the request path, once
	// it is retired or dead (once; nil in tests that start one alone).
	replaced  sync.Once
	successor func()

	mu       sync.Mutex
	runs     map[uint64]*zrun
	served   int
	inflight int
	retired  bool // no new runs: replaced
	dead     bool // its channel has ended
}

// zrun is what the host hears of one run: from its process before the
// script, its pid; from the zygote once it has ended, its report.
type zrun struct {
	ready chan int      // the run's pid (one)
	done  chan struct{} // closed when the run has ended (or the zygote has)
	// Set before done is closed: the report, if one came.
	reported bool
	exitCode int
	cpu      time.Duration
	maxRSS   int64
	failed   string // the zygote could not prepare a run
}

// zygoteArgv is bubblewrap's command line for the zygote: the run's
// sandbox (argv) but with CAP_SYS_ADMIN in the sandbox's user namespace,
// which a run's process needs to make its namespaces and mount its /tmp
// (each run drops it, and every other capability, before the runner),
// and no filter: the zygote forks and mounts; each run installs the
// filter itself.
func (b *Backend) zygoteArgv() []string {
	args := []string{
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--uid", sandboxUID, "--gid", sandboxUID, "--hostname", "sandbank",
		"--disable-userns", "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN",
		"--die-with-parent", "--new-session", "--clearenv",
		"--setenv", "PYTHONHASHSEED", "0",
	}
	args = append(args, b.lay.args...)
	switch {
	case b.scratch > 0 && b.lay.packages != "":
		// The packages' configuration (packages.go); each run mounts
		// its own /tmp over it.
		args = append(args, "--size", strconv.Itoa(zygoteTmpBytes), "--tmpfs", "/tmp")
	case b.scratch > 0:
		args = append(args, "--dir", "/tmp")
	}
	scratch := max(b.scratch, 0)
	net := "own"
	if b.sharesNet() { // landlock.go
		net = "shared"
	}
	return append(args, "--remount-ro", "/", "--chdir", "/", "--", b.lay.python, "-S", "-s", "-B", "-c", zygoteSource,
		b.program(), strconv.FormatInt(scratch, 10), strconv.Itoa(zygoteSpares), strings.Join(cmpOrSlice(b.preload, zygotePreload), " "), net, b.tag,
		b.lay.packages) // packages.go
}

// startZygote starts a zygote and waits for it to say it is ready.
func (b *Backend) startZygote() (*zygote, error) {
	var h handles
	defer h.close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	host, theirs := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote")
	h.hold(host)
	h.hold(theirs) // the zygote's once it starts: its channel ends when the zygote does
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		return nil, err
	}
	c, err := net.FileConn(host) // a copy of host
	if err != nil {
		return nil, err
	}
	conn := c.(*net.UnixConn)
	h.hold(conn)
	filterR, filterW, err := h.pipe()
	if err != nil {
		return nil, err
	}
	_, err = filterW.Write(b.filter)
	h.drop(filterW)
	if err != nil {
		return nil, err
	}
	z := &zygote{conn: conn, stderr: &boundedBuffer{max: 4 << 10}, exited: make(chan struct{}), runs: map[uint64]*zrun{},
		maxRuns: b.zygotes.maxRuns}
	z.cmd = exec.Command(b.bwrap, b.zygoteArgv()...)
	z.cmd.Env = []string{}
	z.cmd.Stderr = z.stderr
	z.cmd.ExtraFiles = []*os.File{theirs, filterR} // fd 3: the channel; fd 4: the filter
	z.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := z.cmd.Start(); err != nil {
		return nil, err
	}
	h.keep(conn) // z's: z.kill closes it
	go func() {
		_ = z.cmd.Wait()
		close(z.exited)
	}()
	_ = conn.SetReadDeadline(time.Now().Add(zygoteStartTimeout))
	kind, _, pid, err := z.read()
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil || kind != 'Z' || pid <= 0 {
		z.kill()
		<-z.exited
		return nil, fmt.Errorf("python: the zygote did not start: %s", firstLine(z.stderr.Bytes()))
	}
	z.pid = pid
	go z.listen()
	return z, nil
}

// addressSpaceOf reads a process's address space, in bytes, from
// /proc/PID/statm.
func addressSpaceOf(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, fmt.Errorf("python: reading a run's memory: %w", err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("python: reading a run's memory: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// zygoteMessageMax bounds a message from the zygote: the longest is a
// zygote's failure (a kind byte, a number and 24 bytes of reason).
const zygoteMessageMax = 512

// read reads one message from the zygote and the pid of the process that
// sent it, as the kernel reports it in the host's pid namespace.
func (z *zygote) read() (kind byte, body []byte, pid int, err error) {
	buf := make([]byte, zygoteMessageMax)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, _, _, err := z.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return 0, nil, 0, err
	}
	if n == 0 {
		return 0, nil, 0, errors.New("python: the zygote's channel ended")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return 0, nil, 0, errors.New("python: a zygote message without credentials")
	}
	cred, err := unix.ParseUnixCredentials(&msgs[0])
	if err != nil {
		return 0, nil, 0, err
	}
	return buf[0], buf[1:n], int(cred.Pid), nil
}

// listen reads the zygote's and its runs' messages until the zygote's
// channel ends.
func (z *zygote) listen() {
	for {
		kind, body, pid, err := z.read()
		if err != nil {
			break
		}
		if len(body) < 8 {
			break
		}
		number := binary.BigEndian.Uint64(body)
		body = body[8:]
		z.mu.Lock()
		r := z.runs[number]
		z.mu.Unlock()
		if r == nil {
			continue // a run the host has given up on
		}
		switch kind {
		case 'R':
			select {
			case r.ready <- pid:
			default:
			}
		case 'E':
			if len(body) != 28 {
				z.retire()
				z.end(number, r)
				continue
			}
			r.reported = true
			r.exitCode = int(int32(binary.BigEndian.Uint32(body)))
			r.cpu = time.Duration(binary.BigEndian.Uint64(body[4:])+binary.BigEndian.Uint64(body[12:])) * time.Microsecond
			r.maxRSS = int64(binary.BigEndian.Uint64(body[20:])) << 10
			z.end(number, r)
		case 'F':
			r.failed = strings.ToValidUTF8(string(body), "?")
			z.retire()
			z.end(number, r)
		}
	}
	z.mu.Lock()
	z.dead = true
	left := z.runs
	z.runs = map[uint64]*zrun{}
	z.mu.Unlock()
	z.replace()
	for _, r := range left {
		close(r.done)
	}
	z.kill()
}

// end closes a run's done once.
func (z *zygote) end(number uint64, r *zrun) {
	z.mu.Lock()
	_, ok := z.runs[number]
	delete(z.runs, number)
	z.mu.Unlock()
	if ok {
		close(r.done)
	}
}

// fork asks the zygote for a run: it sends the run's number and its
// descriptors (stdin, stdout, stderr and the go pipe, through which the
// limits follow; then its group's join files, if any). It fails when
// the zygote is retired or dead.
func (z *zygote) fork(number uint64, files []*os.File) (*zrun, error) {
	r := &zrun{ready: make(chan int, 1), done: make(chan struct{})}
	z.mu.Lock()
	if z.dead || z.retired {
		z.mu.Unlock()
		return nil, errZygoteGone
	}
	z.runs[number] = r
	z.served++
	z.inflight++
	full := z.served >= z.maxRuns
	if full {
		z.retired = true
	}
	z.mu.Unlock()
	if full {
		z.replace()
	}
	msg := binary.BigEndian.AppendUint64(nil, number)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	if _, _, err := z.conn.WriteMsgUnix(msg, unix.UnixRights(fds...), nil); err != nil {
		z.end(number, r)
		z.release(false)
		return nil, errZygoteGone
	}
	return r, nil
}

// errZygoteGone: the zygote ended or was replaced before it forked the
// run; nothing of the run has started, so it is tried on another.
var errZygoteGone = errors.New("python: the zygote is gone")

// retire takes the zygote out of service: its runs in flight go on.
func (z *zygote) retire() {
	z.mu.Lock()
	z.retired = true
	idle := z.inflight == 0
	z.mu.Unlock()
	z.replace()
	if idle {
		z.kill()
	}
}

// release ends a run of the zygote; clean says it ended with its own
// value or thrown error. A retired zygote ends with its last run.
func (z *zygote) release(clean bool) {
	z.mu.Lock()
	z.inflight--
	if !clean {
		z.retired = true
	}
	idle := z.retired && z.inflight == 0
	z.mu.Unlock()
	if !clean {
		z.replace()
	}
	if idle {
		z.kill()
	}
}

// replace starts the zygote's successor in the background, once.
func (z *zygote) replace() {
	z.mu.Lock()
	successor := z.successor // set by install, maybe after listen began
	z.mu.Unlock()
	if successor != nil {
		z.replaced.Do(func() { go successor() })
	}
}

// kill ends the zygote's sandbox and every run in it.
func (z *zygote) kill() {
	if z.cmd.Process != nil {
		_ = syscall.Kill(-z.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = z.conn.Close()
}

// usable reports whether the zygote takes new runs.
func (z *zygote) usable() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return !z.dead && !z.retired
}

// zygote returns the backend's zygote, starting one if there is none in
// service; nil with the reason when this machine cannot have one.
func (b *Backend) zygote() (*zygote, error) {
	zs := b.zygotes
	zs.mu.Lock()
	defer zs.mu.Unlock()
	if zs.closed {
		return nil, errors.New("python: the backend is closed")
	}
	if zs.refused != nil {
		return nil, zs.refused
	}
	if zs.cur != nil && zs.cur.usable() {
		return zs.cur, nil
	}
	// The successors are started from a copy of the backend as it is
	// now: a zygote holds nothing that keeps the backend from being
	// collected (and so its zygote from being closed).
	c := *b
	if s := zs.standby; s != nil && s.usable() {
		zs.standby = nil
		zs.install(s, c.startZygote)
		return s, nil
	}
	return zs.start(c.startZygote)
}

// start starts a zygote with start and puts it in service; its successor
// is started the same way. zs.mu must be held.
func (zs *zygotes) start(start func() (*zygote, error)) (*zygote, error) {
	z, err := start()
	if err != nil {
		return nil, err
	}
	zs.install(z, start)
	return z, nil
}

// install puts z in service, its successor started with start. zs.mu
// must be held.
func (zs *zygotes) install(z *zygote, start func() (*zygote, error)) {
	z.mu.Lock()
	z.successor = func() { zs.succeed(z, start) }
	z.mu.Unlock()
	zs.cur = z
}

// succeed starts old's successor, unless another has taken its place or
// the backend is closed. Runs asked for meanwhile wait for it.
func (zs *zygotes) succeed(old *zygote, start func() (*zygote, error)) {
	zs.mu.Lock()
	if zs.closed || zs.cur != old {
		zs.mu.Unlock()
		return
	}
	if s := zs.standby; s != nil && s.usable() {
		zs.standby = nil
		zs.install(s, start)
	} else {
		if s != nil {
			s.kill()
			zs.standby = nil
		}
		_, _ = zs.start(start) // on failure, the next run starts one (or its own sandbox)
	}
	prepare := !zs.starting && !zs.closed
	if prepare {
		zs.starting = true
	}
	zs.mu.Unlock()
	if prepare {
		zs.prepareStandby(start)
	}
}

// prepareStandby starts a standby zygote.
func (zs *zygotes) prepareStandby(start func() (*zygote, error)) {
	z, err := start()
	zs.mu.Lock()
	defer zs.mu.Unlock()
	zs.starting = false
	if err != nil {
		return
	}
	if zs.closed || zs.standby != nil {
		z.kill()
		return
	}
	zs.standby = z
}

// closeZygotes ends the backend's zygote.
func (b *Backend) closeZygotes() { b.zygotes.close() }

// close ends the zygote in service; later runs start a sandbox each.
func (zs *zygotes) close() {
	zs.mu.Lock()
	defer zs.mu.Unlock()
	zs.closed = true
	for _, z := range []*zygote{zs.cur, zs.standby} {
		if z != nil {
			z.kill()
		}
	}
	zs.cur, zs.standby = nil, nil
}

// nextNumber numbers a run on the backend's zygotes.
func (b *Backend) nextNumber() uint64 {
	b.zygotes.mu.Lock()
	defer b.zygotes.mu.Unlock()
	b.zygotes.number++
	return b.zygotes.number
}

// spawnFromZygote has a prepared run of the zygote take the request and
// places its process in the run's cgroup before it may go on: the
// process waits for the host's go (the limits, on the go pipe) before
// it reads the script, so it is in the group before any of the run's
// code runs. On v1 it moves itself (cgroup.Group.JoinFiles, passed with
// its descriptors) as it takes the request, and the host checks that it
// did; else the host moves it.
func (b *Backend) spawnFromZygote(z *zygote, req spi.Request) (*proc, error) {
	var h handles
	defer h.close()
	var theirs []*os.File // in, out, err, go: the run's ends; then the group's join files
	var ours [4]*os.File
	for i := range 4 {
		r, w, err := h.pipe()
		if err != nil {
			return nil, noOutcome(err)
		}
		if i == 1 || i == 2 { // out, err: the run writes
			r, w = w, r
		}
		theirs, ours[i] = append(theirs, r), w
	}
	inW, outR, errR, goW := ours[0], ours[1], ours[2], ours[3]
	var group *cgroup.Group
	if m := b.cgroups(); m != nil {
		var err error
		if group, err = m.New(groupLimits(req.Limits, zygoteGroupOverhead, zygoteRunTasks)); err != nil { // cgroup.go
			return nil, noOutcome(err)
		}
		join, err := group.JoinFiles()
		if err != nil {
			_ = group.Remove()
			return nil, noOutcome(err)
		}
		for _, f := range join {
			h.hold(f)
		}
		theirs = append(theirs, join...)
	}
	number := b.nextNumber()
	zr, err := z.fork(number, theirs)
	for _, f := range theirs {
		h.drop(f)
	}
	if err != nil {
		if group != nil {
			_ = group.Remove()
		}
		return nil, err
	}
	// From here on, a failure ends the run (it reads no go) and its
	// group, and retires the zygote.
	pidfd := -1
	fail := func(err error) (*proc, error) {
		h.close()
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		if group != nil {
			_ = group.Remove()
		}
		z.end(number, zr)
		z.release(false)
		return nil, err
	}
	var pid int
	wait := time.NewTimer(b.startup)
	defer wait.Stop()
	select {
	case pid = <-zr.ready:
	case <-zr.done:
		return fail(errZygoteGone)
	case <-wait.C:
		return fail(&spi.StartupError{Backend: "python", Phase: "boot", Allowance: b.startup})
	}
	// The process waits for its go until the host writes it: it cannot
	// have ended by itself, only with its zygote (its parent-death
	// signal), and the kernel hands out pids in turn, so pid is still it.
	if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
		return fail(noOutcome(err))
	}
	if group != nil && !group.Holds(pid) {
		b.zygotes.movedByHost.Add(1)
		if err := group.Place(pid); err != nil {
			return fail(noOutcome(err))
		}
	}
	// The run's address space is counted from what its process holds
	// now (the interpreter and the prepared runner): without a group,
	// the memory limit is an address-space rlimit from there.
	base := int64(0)
	if b.addressSpace(req.Limits) > 0 {
		if base, err = addressSpaceOf(pid); err != nil {
			return fail(noOutcome(err))
		}
	}
	if _, err := goW.Write([]byte("g" + b.runnerLimits(req.Limits, base))); err != nil {
		return fail(noOutcome(err))
	}
	h.drop(goW)
	h.keep(inW, outR, errR)
	p := &proc{
		b: b, in: inW, out: outR,
		stderr:   &boundedBuffer{max: 4 << 10},
		errDone:  make(chan struct{}),
		started:  make(chan struct{}),
		ended:    make(chan ending, 1),
		waited:   zr.done,
		frameMax: b.maxResult,
		group:    group,
		zr:       zr, z: z, pidfd: pidfd,
		killed: make(chan struct{}),
	}
	p.begin(req.Limits, errR)
	go p.writeAnswers()
	return p, nil
}

// killRun ends the run: SIGKILL to its process, through the pidfd taken
// while it waited for its go (so never to another process), which takes
// its pid namespace with it (it is pid 1 there).
func (p *proc) killRun() {
	_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	close(p.killed)
}

// stopRun releases a zygote run once it has ended or been killed. A
// run the host ended (proc.hostEnds) keeps its zygote only if the zygote
// reports that it died of a SIGKILL: the host's, since the kernel does
// not let a process in the run's pid namespace kill its pid 1. A run
// that ended otherwise meanwhile (a crash as its clock ran out), or
// whose report does not come within the start-up allowance, retires it.
func (p *proc) stopRun() {
	clean := p.clean.Load()
	if p.hostEnded.Load() {
		t := time.NewTimer(p.b.startup)
		select {
		case <-p.zr.done:
			clean = p.zr.reported && p.zr.exitCode == 128+int(unix.SIGKILL)
		case <-t.C:
			clean = false
		}
		t.Stop()
	} else {
		select {
		case <-p.zr.done:
		case <-p.killed:
		}
	}
	p.out.Close()
	p.removeGroup() // cgroup.go: anything left in it killed
	unix.Close(p.pidfd)
	p.z.release(clean)
}

// observeReport fills in what the zygote reported of the run's process.
func (p *proc) observeReport(o *observation) {
	switch {
	case p.zr.failed != "":
		o.exitCode, o.stderr = 1, []byte(p.zr.failed)
	case p.zr.reported:
		o.exitCode, o.cpu, o.maxRSS = p.zr.exitCode, p.zr.cpu, p.zr.maxRSS
	default:
		o.exited = false // the zygote ended first
	}
}

// zygoteSelfTest runs New's self-test on a zygote, which b keeps when
// it passes. It fails where bubblewrap may not grant CAP_SYS_ADMIN in
// the sandbox's user namespace, or the kernel refuses a run's namespaces
// or its /tmp: the backend's runs then start a sandbox each.
func (b *Backend) zygoteSelfTest(ctx context.Context) error {
	b.zygotes.only = true
	err := b.selfTest(ctx)
	b.zygotes.only = false
	if err != nil {
		b.zygotes.close()
		b.zygotes.mu.Lock()
		b.zygotes.closed = false
		b.zygotes.mu.Unlock()
	}
	return err
}

// ZygoteStatus reports whether this backend's runs are forked from its
// zygote: nil if so, else why not (Options.NoZygote, or what the machine
// refused, in which case each run starts a sandbox of its own, 50 ms or
// more). It checks the machine first, under ctx, if no Warm or Evaluate
// has; a machine that cannot run the sandbox at all is the error.
func (b *Backend) ZygoteStatus(ctx context.Context) error {
	if !b.useZygote {
		return errors.New("python: the zygote is off (Options.NoZygote): each run starts a sandbox of its own")
	}
	if err := b.ready(ctx); err != nil {
		return err
	}
	b.zygotes.mu.Lock()
	defer b.zygotes.mu.Unlock()
	if b.zygotes.refused != nil {
		return fmt.Errorf("python: no zygote on this machine, so each run starts a sandbox of its own: %w", b.zygotes.refused)
	}
	return nil
}
