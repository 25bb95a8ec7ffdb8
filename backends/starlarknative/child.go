//go:build linux

package starlarknative

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandbank/sandbank/internal/cgroup"
	"github.com/sandbank/sandbank/internal/userns"
)

// readyByte is what the child writes once it has confined itself
// (guest/serve_linux.go's Ready).
const readyByte = 'R'

// readyWait bounds how long a new child may take to confine itself and
// say so: far above the milliseconds it takes, so that only a stuck
// child reaches it.
const readyWait = 30 * time.Second

// errNoOutcome is returned (wrapped) when the host could not run the
// child: untyped and worth retrying.
var errNoOutcome = errors.New("starlarknative: no child to run the script")

// Available reports, without starting anything, whether New may succeed
// on this machine: Linux on amd64 or arm64 (where the engine has a
// child), /proc mounted (the child is executed from a memfd through it)
// and, unless the host is root, user namespaces allowed. A nil error is
// no promise (New starts a child and fails if it cannot confine itself);
// an error says what is missing. Package builtin registers the engine
// only when it is nil.
func Available() error {
	if embeddedChild == nil {
		return errors.New("starlarknative: no child for this architecture (linux/amd64 and linux/arm64 only)")
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return fmt.Errorf("starlarknative: /proc is not mounted: %w", err)
	}
	if os.Geteuid() != 0 {
		// A root host makes the namespaces itself; any other needs a
		// user namespace for them.
		if err := userns.Check(true); err != nil {
			return fmt.Errorf("starlarknative: %w", err)
		}
	}
	return nil
}

// KernelBounds reports whether each run of this process gets its own
// cgroup, and so a memory limit that holds whatever the child allocates:
// nil if so, else why not. Without one the child still lowers its Go
// memory limit and RLIMIT_AS, and [Declare] does not claim the memory
// limit.
func KernelBounds() error {
	if _, err := cgroup.Default(); err != nil {
		return fmt.Errorf("starlarknative: no cgroup for runs, so the memory limit is the child's own Go limit and RLIMIT_AS only: %w", err)
	}
	return nil
}

// image is the child's executable in a sealed memfd, executed through
// /proc/self/fd: nothing is written to disk. There is one per process.
type image struct {
	path string // /proc/self/fd/N, N a read-only descriptor of the memfd
}

// childImage returns the process's image, making it on first use.
var childImage = sync.OnceValues(func() (*image, error) { return newImage(embeddedChild) })

// newImage copies exe into a memfd, seals it against any change, and
// keeps a read-only descriptor of it (a writable one would make every
// exec fail with ETXTBSY).
func newImage(exe []byte) (*image, error) {
	fd, err := unix.MemfdCreate("starlark-native", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("starlarknative: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "starlark-native")
	defer f.Close()
	if _, err := f.Write(exe); err != nil {
		return nil, fmt.Errorf("starlarknative: writing the child: %w", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return nil, fmt.Errorf("starlarknative: sealing the child: %w", err)
	}
	ro, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("starlarknative: reopening the child: %w", err)
	}
	return &image{path: "/proc/self/fd/" + strconv.Itoa(ro)}, nil
}

// child is one started, confined child, waiting for its run.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // our write end of its stdin
	stdout *os.File // our read end of its stdout
	stderr *os.File // our read end of its stderr

	waited chan struct{} // closed once the child has been waited for
	state  *os.ProcessState
	once   sync.Once
	killed atomic.Bool // the host killed it
}

// attr is how every child is started: new pid, mount, ipc, uts and
// network namespaces, killed if the host dies. A root host makes them
// itself and starts the child as nobody (no capabilities, no group), so
// that Go starts it with vfork: a fork's copy of the host's page tables
// grows with the host's memory. Any other host adds a user namespace
// whose root, the child, is the host's user.
func attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC |
			syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET,
		Pdeathsig: syscall.SIGKILL,
	}
	if os.Geteuid() == 0 {
		a.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
		return a
	}
	a.Cloneflags |= syscall.CLONE_NEWUSER
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	// Root of the namespace, so that the process's own ids are the
	// mapped ones (without setuid it would keep the host's).
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
	return a
}

// nobody is the user and group a root host's children run as.
const nobody = 65534

// start starts a child and waits until it has confined itself.
func (img *image) start() (*child, error) {
	var files [6]*os.File // in r, in w, out r, out w, err r, err w
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(files[:i])
			return nil, fmt.Errorf("%w: %v", errNoOutcome, err)
		}
		files[i], files[i+1] = r, w
	}
	c := &child{stdin: files[1], stdout: files[2], stderr: files[4], waited: make(chan struct{})}
	c.cmd = &exec.Cmd{
		Path:        img.path,
		Args:        []string{Engine},
		Env:         []string{"GODEBUG=updatemaxprocs=0", "GOTRACEBACK=none"},
		Stdin:       files[0],
		Stdout:      files[3],
		Stderr:      files[5],
		SysProcAttr: attr(),
	}
	err := c.cmd.Start()
	closeAll([]*os.File{files[0], files[3], files[5]})
	if err != nil {
		closeAll([]*os.File{c.stdin, c.stdout, c.stderr})
		return nil, fmt.Errorf("%w: starting the child: %v", errNoOutcome, err)
	}
	go func() {
		c.state, _ = c.cmd.Process.Wait()
		close(c.waited)
	}()
	var b [1]byte
	_ = c.stdout.SetReadDeadline(time.Now().Add(readyWait))
	_, err = io.ReadFull(c.stdout, b[:])
	_ = c.stdout.SetReadDeadline(time.Time{})
	if err != nil || b[0] != readyByte {
		c.kill()
		<-c.waited
		head := make([]byte, 512)
		_ = c.stderr.SetReadDeadline(time.Now().Add(time.Second))
		n, _ := io.ReadFull(c.stderr, head)
		c.discard()
		return nil, fmt.Errorf("starlarknative: the child did not confine itself (%v): %q", c.state, head[:n])
	}
	return c, nil
}

// kill kills the child (the host's decision) unless it already ended.
func (c *child) kill() {
	select {
	case <-c.waited:
	default:
		c.killed.Store(true)
		_ = c.cmd.Process.Kill()
	}
}

// ended reports whether the child has ended.
func (c *child) ended() bool {
	select {
	case <-c.waited:
		return true
	default:
		return false
	}
}

// discard kills the child if it is still running, waits for it and
// closes the host's ends of its pipes. It is idempotent.
func (c *child) discard() {
	c.once.Do(func() {
		c.kill()
		<-c.waited
		closeAll([]*os.File{c.stdin, c.stdout, c.stderr})
	})
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}
